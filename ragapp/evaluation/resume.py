"""Resuming an evaluation that stopped: the same questions, settings and knowledge base.

A whole golden set takes over an hour on a small CPU (docs/evaluation.md, "Running it"), and a
crash, a closed terminal or a machine taken back must not lose the answers already measured.
`eval_rag --resume` reads back every question's finished run and asks again only the questions
without one, or whose run was cut off by the stop itself (Ctrl-C, or a process that died). It
refuses to mix in answers measured under other settings or over another knowledge base: such a
report would describe no configuration at all.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from ragapp.evaluation.golden import GoldenFileError, GoldenItem, load_golden
from ragapp.evaluation.harness import INTERRUPTED
from ragapp.models import Evaluation, QueryRun
from ragapp.selectors import (
    evaluation_finished_runs,
    evaluation_get,
    evaluation_live_runs,
    evaluation_unfinished_latest,
)
from ragapp.services.runs import LOST_PROCESS

LATEST = "last"
# A failed run whose reason begins so was cut off by the stop, not failed by the product.
CUT_OFF = (INTERRUPTED, LOST_PROCESS)


class ResumeError(ValueError):
    """The evaluation cannot be resumed; the message says why and what to do."""


@dataclass
class Resumption:
    """What a resumed evaluation asks: every question of the first start, some already settled."""

    evaluation: Evaluation
    items: list[GoldenItem]
    settled: dict[str, QueryRun]  # golden id -> its finished run, read back
    k: int


def resume_plan(ref: str, *, settings_now: dict, kb_version: int) -> Resumption:
    """The evaluation `ref` (its id, or "last" for the newest unfinished one), ready to go on."""
    evaluation = _find(ref)
    label = f"Evaluation {evaluation.pk} ({evaluation.name})"
    if evaluation.finished_at is not None:
        raise ResumeError(
            f"{label} finished at {evaluation.finished_at:%Y-%m-%d %H:%M}: "
            "there is nothing to resume."
        )
    ids = evaluation.selection.get("ids")
    if not ids:
        raise ResumeError(
            f"{label} does not record its questions (it was started before evaluations could be "
            "resumed): start it again."
        )
    since = timezone.now() - timedelta(seconds=settings.RAG_RUN_STALE_SECONDS)
    if live := evaluation_live_runs(evaluation=evaluation, since=since):
        raise ResumeError(
            f"{label} is still going: its run {live[0].pk} beat within the last "
            f"{settings.RAG_RUN_STALE_SECONDS:.0f} s (RAG_RUN_STALE_SECONDS). Let it finish, or "
            "stop it and resume after that long."
        )
    if changed := _differences(evaluation.settings, settings_now):
        raise ResumeError(
            f"{label} was measured with other settings, so its answers would not compare: "
            + "; ".join(changed)
            + ". Set them as they were, then resume."
        )
    try:
        by_id = {item.id: item for item in load_golden(evaluation.golden_path)}
    except GoldenFileError as exc:
        raise ResumeError(f"{label}: {exc}") from None
    if missing := [i for i in ids if i not in by_id]:
        raise ResumeError(
            f"{label}: {evaluation.golden_path} no longer holds {len(missing)} of its questions "
            f"({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}): start a new one."
        )
    runs = [run for run in evaluation_finished_runs(evaluation=evaluation) if not _cut_off(run)]
    if others := sorted({run.kb_version for run in runs} - {kb_version}, key=str):
        raise ResumeError(
            f"{label}: the knowledge base changed since its first questions were asked (version "
            f"{others[0]} then, {kb_version} now), so its answers would not compare: start a "
            "new evaluation."
        )
    items = [by_id[i] for i in ids]
    return Resumption(evaluation, items, _match(items, runs), int(evaluation.selection["k"]))


def _find(ref: str) -> Evaluation:
    if ref == LATEST:
        if (evaluation := evaluation_unfinished_latest()) is None:
            raise ResumeError("No unfinished evaluation to resume.")
        return evaluation
    try:
        evaluation_id = uuid.UUID(ref)
    except ValueError:
        raise ResumeError(
            f"{ref!r} is not an evaluation id (the UUID eval_rag prints when it starts) "
            f"nor {LATEST!r}."
        ) from None
    if (evaluation := evaluation_get(evaluation_id=evaluation_id)) is None:
        raise ResumeError(f"No evaluation {ref}.")
    return evaluation


def _cut_off(run: QueryRun) -> bool:
    return run.status == QueryRun.Status.FAILED and run.error.startswith(CUT_OFF)


def _differences(then: dict, now: dict) -> list[str]:
    """Each recorded setting whose value now differs, as "NAME is X now, Y then".

    Only the recorded ones: a setting added to the snapshot since was not measured then.
    """
    now = json.loads(json.dumps(now, default=str))  # as the record stored them
    return [
        f"{name} is {now.get(name)!r} now, {then[name]!r} then"
        for name in sorted(then)
        if then[name] != now.get(name)
    ]


def _match(items: list[GoldenItem], runs: list[QueryRun]) -> dict[str, QueryRun]:
    """Each item's finished run: the oldest unclaimed one asking its question word for word.

    A question whose wording changed in the golden file since has no run, and is asked again.
    """
    pool, settled = list(runs), {}
    for item in items:
        run = next((run for run in pool if run.query == item.question), None)
        if run is not None:
            settled[item.id] = run
            pool.remove(run)
    return settled
