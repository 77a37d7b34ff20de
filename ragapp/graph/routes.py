"""Routers: pure functions of state and limits. The loop caps live here, not in the nodes."""

from __future__ import annotations

from typing import Literal

from ragapp.graph.context import GraphLimits
from ragapp.graph.state import RAGState


def start(state: RAGState) -> Literal["condense", "retrieve"]:
    """A follow-up is first made standalone; a first question costs no condense call."""
    return "condense" if state.get("history") else "retrieve"


def after_grade_docs(state: RAGState, limits: GraphLimits) -> Literal["generate", "broaden_query"]:
    """Enough relevant documents: generate. Otherwise broaden, until the last retrieval.

    A question naming something the knowledge base never mentions is not broadened: a broader
    search cannot find the name, only passages about something else.
    """
    if len(state.get("filtered_documents", [])) >= limits.min_relevant_docs:
        return "generate"
    if state.get("unknown_names"):
        return "generate"  # with nothing passed: the honest fallback
    if state.get("iteration_count", 0) < limits.max_retrievals:
        return "broaden_query"
    return "generate"  # force-pass: generate answers honestly from what passed, maybe nothing


def after_generate(state: RAGState) -> Literal["grade_answer", "end"]:
    """The no-docs fallback is not a model answer: there is nothing to grade."""
    return "end" if state.get("fallback") else "grade_answer"


def after_grade_answer(
    state: RAGState, limits: GraphLimits
) -> Literal["answered", "refine_answer", "refused"]:
    """Faithful: done. Unfaithful: refine once; still unfaithful after that: refuse.

    An answer that says the documents do not cover the question is refused at once.
    """
    grade = state.get("answer_grade")
    if grade is not None and grade.faithful:
        return "answered"
    if grade is not None and grade.declined:
        return "refused"  # the writer found no answer in the documents: a rewrite cannot help
    if state.get("correction_count", 0) < limits.max_refinements:
        return "refine_answer"
    return "refused"


def after_refine(state: RAGState) -> Literal["grade_answer", "refused"]:
    """A revised answer is checked again. One the refinement left as it was is refused at once.

    The check would judge the same text over the same documents and give the same verdict:
    on two cores that repeated the whole claims check (1.3-3.7 s on this documentation's runs
    whose doubted opening left nothing after pruning) to reach the refusal already decided.
    """
    return "refused" if state.get("unrevised") else "grade_answer"
