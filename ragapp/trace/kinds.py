"""The kinds of trace event a run emits: declared here once, with no ORM import.

The graph emits them, the emitter stores them, and the stream, the trace text, the API schemas,
the page's script and docs/events.md name them; tests hold those to this declaration.
"""

from __future__ import annotations

from enum import StrEnum


class EventKind(StrEnum):
    """Every kind of trace event, in the order a run usually emits them."""

    RETRIEVE = "retrieve"  # one per retrieval: query, hits and their similarity
    GRADE = "grade"  # one per graded document: score, verdict, reasoning
    GRADE_DOCS = "grade_docs"  # after grading: how many documents passed
    BROADEN = "broaden"  # the query was rewritten: old -> new
    GENERATE = "generate"  # an answer was drafted (or the no-docs fallback used)
    GRADE_ANSWER = "grade_answer"  # faithfulness verdict on the draft
    REFINE = "refine"  # the answer was rewritten to drop unsupported claims
    ANSWER = "answer"  # the final outcome: answer, verdict, sources, metadata
    ERROR = "error"  # the run failed; the payload says why
    DONE = "done"  # always last: the stream can close
