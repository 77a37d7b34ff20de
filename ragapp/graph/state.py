"""The graph's typed state: what flows between the nodes."""

from __future__ import annotations

import operator
from dataclasses import asdict, dataclass
from typing import Annotated, TypedDict


@dataclass(frozen=True)
class RetrievedDoc:
    """A chunk as the graph sees it: text plus where it came from and how close it was."""

    chunk_id: int
    document_id: int
    title: str
    source_path: str
    heading_path: str
    text: str
    similarity: float
    has_code: bool = False
    # What users see: the path relative to the ingest root, and the published page with its
    # anchor ("" when the root has no base URL). Stored in the trace, so a run keeps its links.
    public_path: str = ""
    url: str = ""
    # What the model is shown instead of `text` when set: the parts of a long chunk closest to
    # the question (graph/excerpts.py). Citations and checks still read the whole `text`.
    excerpt: str = ""
    # The text of the same document's next-best chunks in the ranking: an excerpt may draw on
    # them too, since the page is found more often than its chunk that answers (excerpts.py).
    companions: tuple[str, ...] = ()

    def summary(self) -> dict:
        """The document's identity for trace payloads (no full text, no server path)."""
        data = asdict(self)
        data.pop("text")
        data.pop("excerpt")
        data.pop("companions")
        public = data.pop("public_path") or self.source_path
        # The trace streams to the run's owner, who must never see an absolute server path.
        data["source_path"] = public.rsplit("/", 1)[-1] if public.startswith("/") else public
        data["similarity"] = round(self.similarity, 4)
        return data


@dataclass(frozen=True)
class DocGrade:
    """The relevance judgment of one retrieved document."""

    doc: RetrievedDoc
    score: float | None  # None: the judge was not asked (RAG_RELEVANCE_GATE=retrieval)
    relevant: bool
    reasoning: str
    passed: bool
    prefiltered: bool = False  # rejected by the embedding pre-filter, never sent to the judge


@dataclass(frozen=True)
class AnswerGrade:
    """The faithfulness judgment of an answer against its sources."""

    faithfulness_score: float
    hallucination_risk: str  # low | medium | high
    problematic_claims: list[str]
    refinement_suggestion: str
    reasoning: str
    faithful: bool
    # The writer said the documents do not hold the answer: nothing to check, nothing to refine.
    declined: bool = False


class RAGState(TypedDict, total=False):
    """State channels. Counters add up across nodes; everything else is replaced."""

    query: str  # what retrieval searches for; broaden_query rewrites it
    # What is answered: the question as asked, or for a follow-up the standalone question that
    # `condense` wrote; never changed after that.
    original_query: str
    asked_query: str  # a follow-up as the user typed it (set by condense)
    history: list[tuple[str, str]]  # the thread's earlier (question, answer) turns, oldest first
    documents: list[RetrievedDoc]  # the latest retrieval's hits
    grades: list[DocGrade]  # the latest grading, one per document
    filtered_documents: list[RetrievedDoc]  # the hits that passed grading (kept across retrievals)
    # What every answer-level prompt shows, numbered [1]..[n]: the latest graded hits, then the
    # earlier kept ones. Only the filtered ones among them may be used (see `usable_numbers`).
    context_documents: list[RetrievedDoc]
    seen_grades: dict[int, DocGrade]  # every verdict of this run, by chunk id (never re-judged)
    # No verdict of the retrieval passed, but its best reached RAG_RELEVANCE_DOUBT_FLOOR: its
    # chunks are used, and the answer is held to the stricter doubtful threshold.
    doubtful_retrieval: bool
    generation: str  # the current answer
    fallback: bool  # True when generation is the honest no-docs message
    # Technical names in the question that no chunk of the knowledge base holds (the first
    # retrieval finds them, when RAG_REFUSE_UNKNOWN_NAMES is on): the run is refused.
    unknown_names: list[str]
    answer_grade: AnswerGrade | None
    iteration_count: Annotated[int, operator.add]  # retrievals so far
    correction_count: Annotated[int, operator.add]  # refinements so far
    # The refinement left the answer as the check refused it (pruning cut it all, or a rewrite
    # changed nothing): the run ends refused without a second check of the same text.
    unrevised: bool
    # The passage the first retrieval searched with besides the question (RAG_HYDE), or "".
    search_passage: str
    # The refused answer was written again from the found pages' unshown chunks (RAG_READ_ON),
    # after this many refinements of the first answer: the second answer gets its own.
    read_on_done: bool
    refinements_before_read_on: int
    read_on_from: str  # the draft refused before reading on, kept for the audit only


def usable_numbers(state: RAGState) -> list[int]:
    """The [n] numbers, in the shared documents block, of the documents that passed grading."""
    kept = {doc.chunk_id for doc in state.get("filtered_documents", [])}
    return [
        n for n, doc in enumerate(state.get("context_documents", []), 1) if doc.chunk_id in kept
    ]
