"""The gaps page (staff only): what the documentation could not answer, and its export."""

from __future__ import annotations

from django import forms
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpResponse
from django.shortcuts import render

from ragapp.gaps import REASONS, gap_runs, gaps_find
from ragapp.gaps_export import golden_jsonl, golden_lines
from ragapp.providers import get_embeddings
from ragapp.services.gaps import question_vectors_ensure


class GapFilterForm(forms.Form):
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    reason = forms.MultipleChoiceField(
        required=False, choices=list(REASONS.items()), widget=forms.CheckboxSelectMultiple
    )

    def clean(self):
        data = super().clean()
        if data.get("since") and data.get("until") and data["since"] > data["until"]:
            raise forms.ValidationError("'Since' is after 'until'.")
        return data


def filters_from(request) -> tuple[GapFilterForm, dict]:
    form = GapFilterForm(request.GET or None)
    if not form.is_valid():
        return form, {}
    data = form.cleaned_data
    return form, {"since": data["since"], "until": data["until"], "reasons": data["reason"]}


def prepared(filters: dict) -> tuple[str, list[dict]]:
    """Embed the questions not seen before (cached); the embedding model's id and the runs."""
    embeddings = get_embeddings()
    rows = gap_runs(**filters)
    question_vectors_ensure(questions=[r["query"] for r in rows], embeddings=embeddings)
    return embeddings.model_id, rows


@staff_member_required
def gaps_page(request):
    """Groups of questions the documentation did not answer, largest first."""
    form, filters = filters_from(request)
    model_id, rows = prepared(filters)
    gaps = gaps_find(model_id=model_id, rows=rows, **filters)
    return render(
        request,
        "ragapp/gaps.html",
        {"form": form, "gaps": gaps, "query": request.GET.urlencode(), "reasons": REASONS},
    )


@staff_member_required
def gaps_export(request):
    """The same gaps (and helpful answers) as a golden-set file: what export_golden writes."""
    _, filters = filters_from(request)
    model_id, _ = prepared(filters)
    lines = golden_lines(model_id=model_id, **filters)
    response = HttpResponse(golden_jsonl(lines), content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="golden-from-gaps.jsonl"'
    return response
