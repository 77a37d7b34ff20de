"""Golden-set lines from what users asked: the gaps, and the answers they rated helpful.

The lines follow docs/evaluation.md. A gap is an `answerable: false` line, valid as it is, for
the owner to turn answerable once the docs cover it. A helpful answer is an answerable line with
the documents it cited as `sources`; its `facts` only a person can write, so it carries a `todo`
and `eval_rag` refuses it until that is done.
"""

from __future__ import annotations

import datetime as dt
import json

from ragapp.gaps import gaps_find
from ragapp.models import Feedback, QueryRun
from ragapp.services.gaps import question_hash

FACTS_TODO = "fill in 'facts': short strings a correct answer must contain"


def golden_lines(
    *,
    model_id: str,
    gaps: bool = True,
    helpful: bool = True,
    since: dt.date | None = None,
    until: dt.date | None = None,
    reasons: list[str] | None = None,
) -> list[dict]:
    """The golden-set lines, gaps first (largest first), then helpful answers (oldest first)."""
    lines = []
    if gaps:
        for gap in gaps_find(model_id=model_id, since=since, until=until, reasons=reasons):
            example = gap.examples[0]
            lines.append(
                {
                    "id": f"gap-{question_hash(example.question)[:12]}",
                    "question": example.question,
                    "answerable": False,
                    "sources": [],
                    "facts": [],
                    "section": f"gap: asked {gap.count} time(s), last {gap.last_asked:%Y-%m-%d}",
                }
            )
    if helpful:
        lines.extend(_helpful(since=since, until=until))
    return lines


def _helpful(*, since: dt.date | None, until: dt.date | None) -> list[dict]:
    runs = QueryRun.objects.filter(
        evaluation__isnull=True,
        status=QueryRun.Status.ANSWERED,
        feedback__rating=Feedback.Rating.UP,
    ).distinct()
    if since:
        runs = runs.filter(created_at__date__gte=since)
    if until:
        runs = runs.filter(created_at__date__lte=until)
    lines, seen = [], set()
    for run in runs.order_by("created_at"):
        sources = (run.response_metadata or {}).get("sources", [])
        cited = [s for s in sources if s.get("cited")] or sources
        paths = list(dict.fromkeys(s["source_path"] for s in cited if s.get("source_path")))
        key = question_hash(run.query)
        if not paths or key in seen:  # nothing to score against, or asked before
            continue
        seen.add(key)
        lines.append(
            {
                "id": f"helpful-{str(run.pk)[:8]}",
                "question": run.query,
                "answerable": True,
                "sources": paths,
                "facts": [],
                "section": "; ".join(dict.fromkeys(s.get("heading_path", "") for s in cited)),
                "todo": FACTS_TODO,
            }
        )
    return lines


def golden_jsonl(lines: list[dict]) -> str:
    """The lines as a JSONL file."""
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
