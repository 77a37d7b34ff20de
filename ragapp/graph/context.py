"""What the graph's nodes get injected: models, retriever, emitter, limits, usage accounting."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

if TYPE_CHECKING:
    from ragapp.graph.state import RetrievedDoc
    from ragapp.trace.kinds import EventKind


class Emitter(Protocol):
    """Where nodes send trace events (the run's RunEmitter, which stores them; a list in tests).

    A Protocol keeps graph/ free of the ORM: the graph only needs something to emit to.
    """

    def emit(
        self, kind: EventKind, payload: dict, *, node: str = "", duration_ms: float | None = None
    ) -> object: ...


class Retriever(Protocol):
    """Finds the top-k chunks for a query, with the embedding model it searches by; the
    chunks of given pages that mention given terms (the answer check's support lookup); the
    chunks of given pages nearest a query (the `read_on` node); and the names no chunk of the
    knowledge base mentions (retrieval/coverage.py)."""

    mode: str
    embeddings: Embeddings

    def search(
        self, query: str, *, k: int, depth: int | None = None, companions: int = 0
    ) -> list[RetrievedDoc]: ...

    def mentioning(
        self, document_ids: list[int], terms: list[str], *, exclude: list[int]
    ) -> list[RetrievedDoc]: ...

    def never_mentioned(self, names: list[str]) -> list[str]: ...

    def nearest_in(
        self, query: str, document_ids: list[int], *, exclude: list[int], k: int
    ) -> list[RetrievedDoc]: ...


@dataclass(frozen=True)
class ChatModels:
    """The chat model for each job; they may all be the same model."""

    generator: BaseChatModel
    grader: BaseChatModel
    broadener: BaseChatModel
    # Each judge's method: "structured" JSON, or "logprobs" of a one-word yes/no answer.
    relevance_method: str = "structured"
    faithfulness_method: str = "structured"
    structured_method: str = "json_schema"  # how with_structured_output asks for JSON
    bounded_schemas: bool = False  # cap string/list lengths in the schema (local servers)
    names: dict[str, str] = field(default_factory=dict)  # job -> model name, for metadata


@dataclass(frozen=True)
class GraphLimits:
    """Thresholds and caps (the caps are enforced in the routers, not the nodes)."""

    top_k: int = 5
    relevance_threshold: float = 0.75
    # "document": each chunk passes on its own verdict; "retrieval": the best verdict of a
    # retrieval passes every chunk the judge read (RAG_RELEVANCE_GATE).
    relevance_gate: str = "document"
    # With the retrieval gate: a retrieval none of whose verdicts passes, but whose best one is at
    # least this (0: off), is not refused at the gate. Its answer is written and held to
    # `doubtful_answer_threshold` instead (RAG_RELEVANCE_DOUBT_FLOOR).
    relevance_doubt_floor: float = 0.0
    doubtful_answer_threshold: float = 0.5
    min_relevant_docs: int = 1
    answer_confidence_threshold: float = 0.80
    max_retrievals: int = 3
    max_refinements: int = 1
    grade_concurrency: int = 4
    # Chunks less similar than this to the question are rejected without asking the judge.
    prefilter_similarity: float = 0.0
    # Whether a "high" hallucination risk vetoes an answer whose score passes.
    risk_veto: bool = True
    # Retrieved chunks after the first are shown as excerpts of this many characters (0: off).
    excerpt_chars: int = 0
    answer_max_tokens: int = 0  # the longest answer the generator may write (0: its own cap)
    # Refuse at once a question naming a technical name the knowledge base never mentions.
    refuse_unknown_names: bool = False
    # Search the first retrieval with the question and a passage the model writes for it (HyDE).
    hyde: bool = False
    # A refused answer is written once more from this many chunks of the found pages that the
    # writer was not shown whole (0: off; RAG_READ_ON, the `read_on` node).
    read_on: int = 0


@dataclass
class Usage:
    """Token counts per model, summed across calls from any thread."""

    tokens: dict[str, dict[str, int]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, model: str, message) -> None:
        """Count the usage reported on an AIMessage (if the server reported any)."""
        meta = getattr(message, "usage_metadata", None) or {}
        with self._lock:
            entry = self.tokens.setdefault(model, {"input": 0, "output": 0, "calls": 0})
            entry["input"] += int(meta.get("input_tokens", 0))
            entry["output"] += int(meta.get("output_tokens", 0))
            entry["calls"] += 1


@dataclass
class GraphContext:
    """Run-scoped dependencies, passed as LangGraph's runtime context."""

    models: ChatModels
    retriever: Retriever
    emitter: Emitter
    limits: GraphLimits = field(default_factory=GraphLimits)
    usage: Usage = field(default_factory=Usage)
    timings: dict[str, float] = field(default_factory=dict)  # node -> total ms
    # The claims check's verdicts of this run, by prompt: a claim asked again over the same
    # documents (a pruned answer's surviving sentences) is not put to the model twice.
    claim_verdicts: dict[str, float] = field(default_factory=dict)
    # time.monotonic() by which the run must be done (RAG_RUN_MAX_SECONDS); None: no limit.
    deadline: float | None = None
    max_seconds: float | None = None  # the limit the deadline came from, for the message

    def check_deadline(self, step: str) -> None:
        """Raise RunTimeLimitExceeded if the run's time is up, before it starts `step`."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise RunTimeLimitExceeded(
                f"The run took longer than its limit of {self.max_seconds:.0f} s "
                f"(RAG_RUN_MAX_SECONDS) and was stopped before {step}."
            )


class RunTimeLimitExceeded(Exception):
    """The run passed RAG_RUN_MAX_SECONDS; the runner fails it with this message."""
