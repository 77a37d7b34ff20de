"""Put each golden question to the assistant and collect what the metrics need.

Retrieval is measured on what the graph's first retrieval searches for, before any grading: the
same retriever, looking 10 deep for MRR@10. In full mode the question runs through the real graph
with the configured providers, stored as a run of the evaluation, and its search is measured: the
question as asked and, with RAG_HYDE, the passage the model wrote for it (graph/hypothesis.py),
read from the run's trace. Retrieval-only mode calls no chat model, so it measures the question
alone, as the graph searches with RAG_HYDE off.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import asdict, dataclass, field

from django.conf import settings

from ragapp.evaluation.golden import GoldenItem
from ragapp.evaluation.metrics import (
    fact_label,
    fact_present,
    facts_accuracy,
    recall_at_k,
    reciprocal_rank,
    source_matches,
)
from ragapp.graph.hypothesis import search_text
from ragapp.models import Evaluation, QueryRun
from ragapp.providers import get_embeddings
from ragapp.retrieval.retrievers import CANDIDATE_FACTOR, build_retriever
from ragapp.runs.runner import execute_run
from ragapp.services import IllegalTransition, run_abort, run_create

MRR_DEPTH = 10
# How the reason of a run stopped with its evaluation begins.
INTERRUPTED = "The evaluation was stopped while this question ran"
logger = logging.getLogger(__name__)


@dataclass
class QuestionResult:
    """Everything measured for one golden question."""

    id: str
    question: str
    answerable: bool
    sources: list[str]
    ranked_sources: list[str]
    recall_at_k: float
    reciprocal_rank: float
    retrieval_ms: float
    run_id: str = ""
    status: str = ""
    answer: str = ""
    facts: dict[str, bool] = field(default_factory=dict)
    facts_ok: bool | None = None
    faithfulness_score: float | None = None
    relevance_expected: list[float] = field(default_factory=list)
    relevance_other: list[float] = field(default_factory=list)
    expected_graded: int = 0
    expected_passed: int = 0
    prefiltered: int = 0
    broadened: bool = False
    refined: bool = False
    total_ms: float | None = None
    node_ms: dict[str, float] = field(default_factory=dict)
    tokens: dict[str, dict] = field(default_factory=dict)
    cost_usd: float | None = None
    error: str = ""

    @property
    def refused(self) -> bool:
        return self.status == QueryRun.Status.REFUSED

    def as_dict(self) -> dict:
        return asdict(self)


def settings_snapshot() -> dict:
    """The settings that decide quality and speed, recorded with each evaluation."""
    names = [
        "RAG_EMBEDDING_PROVIDER",
        "RAG_CHAT_PROVIDER",
        "RAG_GENERATION_MODEL",
        "RAG_GRADER_MODEL",
        "RAG_BROADEN_MODEL",
        "RAG_RELEVANCE_JUDGE",
        "RAG_RELEVANCE_GATE",
        "RAG_FAITHFULNESS_JUDGE",
        "RAG_RETRIEVAL_MODE",
        "RAG_HYBRID_TEXT_WEIGHT",
        "RAG_MAX_CHUNKS_PER_DOCUMENT",
        "RAG_TOP_K",
        "RAG_RELEVANCE_THRESHOLD",
        "RAG_ANSWER_CONFIDENCE_THRESHOLD",
        "RAG_MIN_RELEVANT_DOCS",
        "RAG_MAX_RETRIEVALS",
        "RAG_HYDE",
        "RAG_READ_ON",
        "RAG_RELEVANCE_PREFILTER",
        "RAG_FAITHFULNESS_RISK_VETO",
        "RAG_EXCERPT_CHARS",
        "RAG_ANSWER_MAX_TOKENS",
        "RAG_REFUSE_UNKNOWN_NAMES",
        "RAG_CHUNK_SIZE",
        "RAG_CHUNK_OVERLAP",
        "RAG_HNSW_EF_SEARCH",
    ]
    return {name: getattr(settings, name) for name in names}


def evaluate(
    items: list[GoldenItem],
    *,
    evaluation: Evaluation | None,
    k: int,
    full: bool,
    on_result: Callable[[QuestionResult], None] | None = None,
    settled: Mapping[str, QueryRun] | None = None,
) -> list[QuestionResult]:
    """Measure every item, in order; `on_result` is called after each (progress).

    An item with a run in `settled` (golden id -> run; `eval_rag --resume`) is not asked again:
    its answer is read from that run, and its retrieval measured anew (no model is called).
    """
    retriever = build_retriever(mode=settings.RAG_RETRIEVAL_MODE, embeddings=get_embeddings())
    settled = settled or {}
    results = []
    for item in items:
        run, problem = settled.get(item.id), ""
        if full and run is None:
            try:
                run = _run(item, evaluation)
            except Exception as exc:  # the run row says failed; the evaluation goes on
                logger.exception("evaluation question %s failed", item.id)
                problem = f"{type(exc).__name__}: {exc}"
        result = _retrieval(item, retriever, k, _passage(run))
        if run is not None:
            _answer(item, result, run)
        elif full:
            result.status = QueryRun.Status.FAILED
            result.error = problem
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def _passage(run: QueryRun | None) -> str:
    """The passage the run's first retrieval searched with besides the question ("": none)."""
    first = run.events.filter(kind="retrieve").order_by("seq").first() if run else None
    return (first.payload.get("hypothesis") or "") if first else ""


def _retrieval(item: GoldenItem, retriever, k: int, passage: str = "") -> QuestionResult:
    started = time.perf_counter()
    # The graph ranks RAG_TOP_K * CANDIDATE_FACTOR candidates; ranking exactly as many here makes
    # the first RAG_TOP_K results the very chunks its first retrieval gets.
    depth = settings.RAG_TOP_K * CANDIDATE_FACTOR
    docs = retriever.search(search_text(item.question, passage), k=max(k, MRR_DEPTH), depth=depth)
    elapsed = (time.perf_counter() - started) * 1000
    ranked = [doc.source_path for doc in docs]
    return QuestionResult(
        id=item.id,
        question=item.question,
        answerable=item.answerable,
        sources=list(item.sources),
        ranked_sources=ranked,
        recall_at_k=recall_at_k(ranked, item.sources, k) if item.answerable else 0.0,
        reciprocal_rank=reciprocal_rank(ranked, item.sources, MRR_DEPTH)
        if item.answerable
        else 0.0,
        retrieval_ms=round(elapsed, 2),
    )


def _run(item: GoldenItem, evaluation: Evaluation | None) -> QueryRun:
    run = run_create(query=item.question, evaluation=evaluation)
    try:
        execute_run(run)
    except KeyboardInterrupt:
        # Ctrl-C is not the product failing: say so in the run, which `--resume` asks again.
        with suppress(IllegalTransition):  # it had finished
            run_abort(run=run, error=f"{INTERRUPTED} (Ctrl-C); `eval_rag --resume` asks it again.")
        raise
    run.refresh_from_db()
    return run


def _answer(item: GoldenItem, result: QuestionResult, run: QueryRun) -> None:
    meta = run.response_metadata or {}
    result.run_id = str(run.pk)
    result.status = run.status
    result.answer = run.answer
    result.error = run.error
    result.faithfulness_score = run.faithfulness_score
    result.refined = run.correction_count > 0
    result.total_ms = meta.get("total_ms")
    result.node_ms = meta.get("node_ms", {})
    result.tokens = meta.get("tokens", {})
    result.cost_usd = meta.get("cost_usd")
    if item.answerable:
        answered = run.status == QueryRun.Status.ANSWERED
        result.facts = {
            fact_label(fact): answered and fact_present(fact, run.answer) for fact in item.facts
        }
        result.facts_ok = answered and facts_accuracy(item.facts, run.answer)
    for event in run.events.order_by("seq"):
        if event.kind == "broaden":
            result.broadened = True
        elif event.kind == "grade":
            if event.payload.get("prefiltered"):
                result.prefiltered += 1
                continue  # rejected by the embedding pre-filter: no judge gave this score
            path = event.payload["document"]["source_path"]
            score = event.payload["score"]  # None: not asked, its retrieval had passed already
            if any(source_matches(path, name) for name in item.sources):
                if score is not None:
                    result.relevance_expected.append(score)
                result.expected_graded += 1
                result.expected_passed += bool(event.payload["passed"])
            elif score is not None:
                result.relevance_other.append(score)
