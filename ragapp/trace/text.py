"""One readable line per trace event, for the terminal (`manage.py ask`) and the admin."""

from __future__ import annotations

from ragapp.trace.kinds import EventKind


def _where(doc: dict) -> str:
    heading = doc.get("heading_path") or doc.get("title") or ""
    source = doc.get("source_path", "?")
    return f"{source} > {heading}" if heading else source


def _ms(payload: dict) -> str:
    return f" ({payload['duration_ms']:.0f} ms)" if payload.get("duration_ms") is not None else ""


def describe(kind: str, payload: dict) -> str:
    """A one-line description of an event, as a support engineer would want to read it."""
    try:
        return _describe(kind, payload)
    except (KeyError, TypeError, ValueError):
        # An event stored by an older version may lack a field: show it plainly, never fail.
        return f"{kind}: {payload}"


def _describe(kind: str, payload: dict) -> str:
    if kind == EventKind.RETRIEVE:
        return (
            f"retrieve #{payload['iteration']}: {payload['docs_found']} documents for "
            f"'{payload['query']}' by {payload['mode']} search{_ms(payload)}"
        )
    if kind == EventKind.GRADE:
        verdict = "kept" if payload["passed"] else "filtered out"
        return (
            f"grading document {payload['index']} of {payload['total']} ... relevance "
            f"{payload['score']:.2f}, {verdict} - {_where(payload['document'])}"
        )
    if kind == EventKind.GRADE_DOCS:
        return f"{payload['passed']} of {payload['total']} documents passed{_ms(payload)}"
    if kind == EventKind.BROADEN:
        return f"broadened the query: '{payload['old_query']}' → '{payload['new_query']}'"
    if kind == EventKind.GENERATE:
        if payload.get("fallback"):
            return "no relevant documents: answering with the honest fallback (no model call)"
        return f"generated an answer from {len(payload['sources'])} documents{_ms(payload)}"
    if kind == EventKind.GRADE_ANSWER:
        if payload.get("declined"):
            return f"the answer says the documents do not cover the question{_ms(payload)}"
        verdict = "faithful" if payload["faithful"] else "not faithful"
        return (
            f"faithfulness {payload['faithfulness_score']:.2f}, risk "
            f"{payload['hallucination_risk']}: {verdict}{_ms(payload)}"
        )
    if kind == EventKind.REFINE:
        return f"refined the answer to drop {len(payload['problematic_claims'])} claim(s)"
    if kind == EventKind.ANSWER:
        return f"final: {payload['status']}"
    if kind == EventKind.ERROR:
        return f"error: {payload['message']}"
    if kind == EventKind.DONE:
        return f"done ({payload['status']})"
    return kind
