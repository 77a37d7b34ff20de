"""Resuming an evaluation that stopped: the same questions, settings and knowledge base.

A whole golden set takes over an hour on a small CPU (docs/evaluation.md, "Running it"), and a
crash, a closed terminal or a machine taken back must not lose the answers already measured.
`eval_rag --resume` asks again only the questions that have no answered or refused run, and it
refuses to mix in answers measured under other settings or over another knowledge base: such a
report would describe no configuration at all.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from ragapp.evaluation.golden import GoldenFileError, GoldenItem, load_golden
from ragapp.models import Evaluation, QueryRun
from ragapp.selectors import evaluation_get, evaluation_settled_runs, evaluation_unfinished_latest

LATEST = "last"


class ResumeError(ValueError):
    """The evaluation cannot be resumed; the message says why and what to do."""


@dataclass
class Resumption:
    """What a resumed evaluation asks: every question of the first start, some already settled."""

    evaluation: Evaluation
    items: list[GoldenItem]
    settled: dict[str, QueryRun]  # golden id -> its answered or refused run
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
    runs = evaluation_settled_runs(evaluation=evaluation)
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


def _differences(then: dict, now: dict) -> list[str]:
    """Each setting whose value now is not the recorded one, as "NAME is X now, Y then"."""
    now = json.loads(json.dumps(now, default=str))  # as the record stored them
    return [
        f"{name} is {now.get(name)!r} now, {then.get(name)!r} then"
        for name in sorted(set(then) | set(now))
        if then.get(name) != now.get(name)
    ]


def _match(items: list[GoldenItem], runs: list[QueryRun]) -> dict[str, QueryRun]:
    """Each item's settled run: the oldest unclaimed one asking its question word for word.

    A question whose wording changed in the golden file since has no run, and is asked again.
    """
    pool, settled = list(runs), {}
    for item in items:
        run = next((run for run in pool if run.query == item.question), None)
        if run is not None:
            settled[item.id] = run
            pool.remove(run)
    return settled
