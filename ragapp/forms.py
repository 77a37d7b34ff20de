"""Forms of the portal."""

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from ragapp.models import QueryRun
from ragapp.services.runs import clean_query


class AskForm(forms.Form):
    """A question for the assistant."""

    query = forms.CharField(
        label="Your question",
        # static/ragapp/ask.js submits on Ctrl+Enter (Cmd+Enter on a Mac); announced here.
        widget=forms.Textarea(
            attrs={"rows": 3, "autofocus": True, "aria-keyshortcuts": "Control+Enter Meta+Enter"}
        ),
        strip=False,  # stored verbatim; clean_query rejects what is empty or too long
        error_messages={"required": "The query is empty."},  # the API's words for ""
    )
    # Set by the "Fresh answer" button of a reused answer: run the graph, reuse nothing.
    fresh = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["query"].max_length = settings.RAG_MAX_QUERY_CHARS
        self.fields["query"].widget.attrs["maxlength"] = settings.RAG_MAX_QUERY_CHARS

    def clean_query(self):
        try:
            return clean_query(self.cleaned_data["query"])
        except ValidationError as exc:
            raise forms.ValidationError(exc.messages) from None


class FollowUpForm(AskForm):
    """A follow-up under an answer: the same checks, in the same thread.

    No autofocus: it sits under an answer the reader has come to read.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["query"].label = "Ask a follow-up"
        self.fields["query"].widget.attrs.pop("autofocus", None)
        self.fields["query"].widget.attrs["rows"] = 2


class FeedbackForm(forms.Form):
    """Thumbs up or down, with an optional comment.

    The page sends the rating as the value of the thumb button clicked (templates/ragapp/
    _feedback.html), so one click rates; the comment box comes with the form after that.
    """

    rating = forms.TypedChoiceField(
        choices=[(1, "Helpful"), (-1, "Not helpful")], coerce=int, widget=forms.RadioSelect
    )
    comment = forms.CharField(
        required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2, "maxlength": 2000})
    )


class HistoryFilterForm(forms.Form):
    """Search and filters of the history page (all optional)."""

    q = forms.CharField(required=False, max_length=200, label="Search")
    status = forms.ChoiceField(required=False, choices=[("", "any status")])
    risk = forms.ChoiceField(required=False, choices=[("", "any verdict")])
    since = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    until = forms.DateField(
        required=False, label="To", widget=forms.DateInput(attrs={"type": "date"})
    )
    # Staff only (the view drops it for others): the runs `manage.py eval_rag` made, which
    # would otherwise crowd out people's questions, are shown apart and only when asked for.
    evaluation = forms.BooleanField(required=False, label="Evaluation runs")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["status"].choices += list(QueryRun.Status.choices)
        self.fields["risk"].choices += list(QueryRun.Risk.choices)
