"""One readable line per trace event, for the terminal (`manage.py ask`) and the admin.

Each kind has its own describer in DESCRIBERS; tests/ragapp/trace/test_kinds.py checks that the
mapping covers every EventKind and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable

from ragapp.retrieval.coverage import UNKNOWN_NAMES_REASON
from ragapp.trace.kinds import EventKind


def _where(doc: dict) -> str:
    heading = doc.get("heading_path") or doc.get("title") or ""
    source = doc.get("source_path", "?")
    return f"{source} > {heading}" if heading else source


def _ms(payload: dict) -> str:
    return f" ({payload['duration_ms']:.0f} ms)" if payload.get("duration_ms") is not None else ""


def _retrieve(payload: dict) -> str:
    # Older runs have no `excerpted`; a run that cut none says nothing about it either.
    excerpted = payload.get("excerpted") or 0
    unknown = payload.get("unknown_names") or []
    if payload.get("read_on"):
        return (
            f"read on: {payload['docs_found']} more "
            f"{'chunk' if payload['docs_found'] == 1 else 'chunks'} of the pages found, after the "
            "answer was refused" + _ms(payload)
        )
    return (
        f"retrieve #{payload['iteration']}: {payload['docs_found']} documents for "
        f"'{payload['query']}' by {payload['mode']} search"
        + (f", {excerpted} shown to the model as excerpts" if excerpted else "")
        + (f"; no document mentions {', '.join(unknown)}" if unknown else "")
        + _hypothesis(payload)
        + _ms(payload)
    )


def _hypothesis(payload: dict) -> str:
    # RAG_HYDE: the passage the model wrote, searched for with the question (never evidence).
    if payload.get("hypothesis"):
        took = payload.get("hypothesis_ms")
        written = f" in {took:.0f} ms" if took is not None else ""
        return (
            f"; searched with a passage the model wrote for it{written}: '{payload['hypothesis']}'"
        )
    problem = payload.get("hypothesis_problem")
    return f"; no passage written for the search ({problem})" if problem else ""


def _grade(payload: dict) -> str:
    verdict = "kept" if payload["passed"] else "filtered out"
    score = payload["score"]
    relevance = "not asked" if score is None else f"relevance {score:.2f}"
    reasoning = payload.get("reasoning") or ""
    if score is None and reasoning.startswith(UNKNOWN_NAMES_REASON):
        relevance = reasoning  # "not asked: the question names QUIC, which no document ..."
    return (
        f"grading document {payload['index']} of {payload['total']} ... {relevance}, "
        f"{verdict} - {_where(payload['document'])}"
    )


def _grade_docs(payload: dict) -> str:
    # RAG_RELEVANCE_DOUBT_FLOOR: none reached the threshold, but the best verdict came near it.
    doubtful = (
        " as doubtful, so the answer is held to a stricter check" if payload.get("doubtful") else ""
    )
    return f"{payload['passed']} of {payload['total']} documents passed{doubtful}{_ms(payload)}"


def _reuse(payload: dict) -> str:
    exact = payload["match"] == "exact"
    how = "the same question" if exact else f"a question {payload['similarity']:.2f} similar"
    return (
        f"answered earlier: reusing run {payload['reused_run']} ({how}, knowledge base version "
        f"{payload['index_version']}); no model was called"
    )


def _condense(payload: dict) -> str:
    if payload.get("fallback"):
        return (
            f"kept the follow-up as asked: {payload['reason']} - '{payload['original_question']}'"
        )
    note = f" ({payload['reason']})" if payload.get("reason") else ""
    return (
        f"made the follow-up standalone: '{payload['original_question']}' → "
        f"'{payload['standalone_question']}'{_ms(payload)}{note}"
    )


def _broaden(payload: dict) -> str:
    return f"broadened the query: '{payload['old_query']}' → '{payload['new_query']}'"


def _generate(payload: dict) -> str:
    if payload.get("fallback"):
        return "no relevant documents: answering with the honest fallback (no model call)"
    doubted = (
        ", stopped at its opening claim, which the check doubted"
        if payload.get("opening_doubted")
        else ""
    )
    return f"generated an answer from {len(payload['sources'])} documents{doubted}{_ms(payload)}"


def _grade_answer(payload: dict) -> str:
    if payload.get("declined"):
        return f"the answer says the documents do not cover the question{_ms(payload)}"
    verdict = "faithful" if payload["faithful"] else "not faithful"
    return (
        f"faithfulness {payload['faithfulness_score']:.2f}, risk "
        f"{payload['hallucination_risk']}: {verdict}{_ms(payload)}{_supporting(payload)}"
    )


def _supporting(payload: dict) -> str:
    added = payload.get("supporting_documents") or []  # absent in events before 2026-12-02
    if not added:
        return ""
    return "; read with passages from the same pages: " + ", ".join(_where(d) for d in added)


def _refine(payload: dict) -> str:
    text = f"refined the answer to drop {len(payload['problematic_claims'])} claim(s)"
    if payload.get("unrevised"):  # absent in events before 2026-12-07
        text += ": nothing new was left to check, so it is refused without a second check"
    return text


def _answer(payload: dict) -> str:
    return f"final: {payload['status']}"


def _error(payload: dict) -> str:
    return f"error: {payload['message']}"


def _done(payload: dict) -> str:
    return f"done ({payload['status']})"


DESCRIBERS: dict[EventKind, Callable[[dict], str]] = {
    EventKind.REUSE: _reuse,
    EventKind.CONDENSE: _condense,
    EventKind.RETRIEVE: _retrieve,
    EventKind.GRADE: _grade,
    EventKind.GRADE_DOCS: _grade_docs,
    EventKind.BROADEN: _broaden,
    EventKind.GENERATE: _generate,
    EventKind.GRADE_ANSWER: _grade_answer,
    EventKind.REFINE: _refine,
    EventKind.ANSWER: _answer,
    EventKind.ERROR: _error,
    EventKind.DONE: _done,
}


def describe(kind: str, payload: dict) -> str:
    """A one-line description of an event, as a support engineer would want to read it."""
    describer = DESCRIBERS.get(kind)  # a stored kind is a plain str; EventKind keys hash alike
    if describer is None:
        return kind
    try:
        return describer(payload)
    except (KeyError, TypeError, ValueError):
        # An event stored by an older version may lack a field: show it plainly, never fail.
        return f"{kind}: {payload}"
