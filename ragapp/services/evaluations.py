"""Writes: evaluation records of `manage.py eval_rag`."""

from __future__ import annotations

from django.utils import timezone

from ragapp.models import Evaluation


def evaluation_create(
    *, name: str, golden_path: str, mode: str, settings: dict, selection: dict | None = None
) -> Evaluation:
    """Record that an evaluation of `golden_path` starts, with the questions it will ask."""
    return Evaluation.objects.create(
        name=name[:200],
        golden_path=golden_path[:1024],
        mode=mode,
        settings=settings,
        selection=selection or {},
    )


def evaluation_finish(*, evaluation: Evaluation, questions: int, report: dict) -> Evaluation:
    """Store the evaluation's aggregate report."""
    evaluation.questions = questions
    evaluation.report = report
    evaluation.finished_at = timezone.now()
    evaluation.save(update_fields=["questions", "report", "finished_at"])
    return evaluation
