"""Forms of the portal."""

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from ragapp.services.runs import clean_query


class AskForm(forms.Form):
    """A question for the assistant."""

    query = forms.CharField(
        label="Your question",
        widget=forms.Textarea(attrs={"rows": 3, "autofocus": True}),
        strip=False,  # stored verbatim; clean_query rejects what is empty or too long
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["query"].max_length = settings.RAG_MAX_QUERY_CHARS
        self.fields["query"].widget.attrs["maxlength"] = settings.RAG_MAX_QUERY_CHARS

    def clean_query(self):
        try:
            return clean_query(self.cleaned_data["query"])
        except ValidationError as exc:
            raise forms.ValidationError(exc.messages) from None
