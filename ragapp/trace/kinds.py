"""The kinds of trace event a run emits: declared here once, with no ORM import.

The graph emits them, the emitter stores them, and the stream, the trace text, the API schemas,
the page's script and docs/events.md name them; tests/ragapp/trace/test_kinds.py holds each of
those places to this declaration, so a new kind cannot be half added.
"""

from __future__ import annotations

from enum import StrEnum


class EventKind(StrEnum):
    """Every kind of trace event, in the order a run usually emits them, with a short label."""

    label: str  # for people: the run page gets each kind with its label, through kind_labels()

    def __new__(cls, value: str, label: str) -> EventKind:
        member = str.__new__(cls, value)
        member._value_ = value
        member.label = label
        return member

    # An earlier run's verified answer is reused: which run, how it matched, the index version.
    REUSE = "reuse", "Answered earlier"
    # A follow-up made standalone: the question as asked, the standalone one, the duration.
    CONDENSE = "condense", "Standalone question"
    RETRIEVE = "retrieve", "Retrieval"  # one per retrieval: query, hits and their similarity
    GRADE = "grade", "Document grade"  # one per graded document: score, verdict, reasoning
    GRADE_DOCS = "grade_docs", "Grading summary"  # after grading: how many documents passed
    BROADEN = "broaden", "Broadened query"  # the query was rewritten: old -> new
    GENERATE = "generate", "Answer draft"  # an answer was drafted (or the no-docs fallback used)
    GRADE_ANSWER = "grade_answer", "Faithfulness check"  # faithfulness verdict on the draft
    REFINE = "refine", "Refinement"  # the answer was rewritten to drop unsupported claims
    ANSWER = "answer", "Final answer"  # the final outcome: answer, verdict, sources, metadata
    ERROR = "error", "Error"  # the run failed; the payload says why
    DONE = "done", "Done"  # always last: the stream can close


def kind_labels() -> dict[str, str]:
    """Every kind's label by its value, in declaration order: what the run page's script gets."""
    return {kind.value: kind.label for kind in EventKind}
