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
) -> Literal["answered", "refine_answer", "read_on", "refused"]:
    """Faithful: done. Unfaithful: refine once; still unfaithful after that: read on or refuse.

    An answer that says the documents do not cover the question is not refined: the run reads
    on (`may_read_on`) or is refused at once.
    """
    grade = state.get("answer_grade")
    if grade is not None and grade.faithful:
        return "answered"
    if grade is not None and grade.declined:
        # The writer found no answer in the documents: a rewrite cannot help, other chunks may.
        return "read_on" if may_read_on(state, limits) else "refused"
    refinements = state.get("correction_count", 0) - state.get("refinements_before_read_on", 0)
    if refinements < limits.max_refinements:
        return "refine_answer"
    return "read_on" if may_read_on(state, limits) else "refused"


def after_refine(
    state: RAGState, limits: GraphLimits
) -> Literal["grade_answer", "read_on", "refused"]:
    """A revised answer is checked again. One the refinement left as it was is not.

    The check would judge the same text over the same documents and give the same verdict:
    on two cores that repeated the whole claims check (1.3-3.7 s on this documentation's runs
    whose doubted opening left nothing after pruning) to reach the refusal already decided. The
    run reads on (`may_read_on`) or is refused.
    """
    if not state.get("unrevised"):
        return "grade_answer"
    return "read_on" if may_read_on(state, limits) else "refused"


def after_read_on(state: RAGState) -> Literal["generate", "refused"]:
    """The second read is written, unless the pages held no chunk the writer had not read."""
    return "generate" if state.get("answer_grade") is None else "refused"


def may_read_on(state: RAGState, limits: GraphLimits) -> bool:
    """Whether a refused answer is written once more, from the found pages' unshown chunks.

    Once a run (RAG_READ_ON), and only after a retrieval that passed the relevance gate as
    relevant: a doubtful one is held to its stricter check and not given a second try, and a
    question naming what the knowledge base never mentions is never answered.
    """
    return bool(
        limits.read_on
        and not state.get("read_on_done")
        and state.get("filtered_documents")
        and not state.get("doubtful_retrieval")
        and not state.get("unknown_names")
    )
