"""Execute one run: the graph, its trace, and the run row's final state. Never leaves it hanging.

This is the one way a run is executed, whoever asks: the executor's threads, a Celery worker,
`manage.py ask` and `eval_rag`. `execute_run` heartbeats for the run while it executes, so a
sweeper in any process that shares the database sees it alive however long its model calls take.
"""

from __future__ import annotations

import logging
import re
import time

from django.conf import settings
from django.db import close_old_connections, connections, transaction

from ragapp.graph.builder import build_graph
from ragapp.graph.context import ChatModels, GraphContext, GraphLimits
from ragapp.graph.grounding import MISSING
from ragapp.graph.prompts import FALLBACK_ANSWER, listed
from ragapp.graph.state import usable_numbers
from ragapp.models import QueryRun
from ragapp.observability.instrument import observed_run
from ragapp.pricing import estimate_cost
from ragapp.providers import get_embeddings
from ragapp.providers.chat import get_chat_models
from ragapp.retrieval.retrievers import build_retriever
from ragapp.runs.liveness import executing
from ragapp.selectors import thread_history
from ragapp.services import IllegalTransition, run_fail, run_finish, run_start
from ragapp.trace.emitter import RunEmitter, Subscriber
from ragapp.trace.kinds import EventKind
from ragapp.trace.redaction import public_message
from ragapp.trace.stream import publish

logger = logging.getLogger(__name__)
_CITATION = re.compile(r"\[(\d{1,2})\]")


def limits_from_settings() -> GraphLimits:
    """The thresholds and caps configured by RAG_* settings."""
    return GraphLimits(
        top_k=settings.RAG_TOP_K,
        relevance_threshold=settings.RAG_RELEVANCE_THRESHOLD,
        relevance_gate=settings.RAG_RELEVANCE_GATE,
        relevance_doubt_floor=settings.RAG_RELEVANCE_DOUBT_FLOOR,
        doubtful_answer_threshold=settings.RAG_DOUBTFUL_ANSWER_THRESHOLD,
        min_relevant_docs=settings.RAG_MIN_RELEVANT_DOCS,
        max_retrievals=settings.RAG_MAX_RETRIEVALS,
        answer_confidence_threshold=settings.RAG_ANSWER_CONFIDENCE_THRESHOLD,
        grade_concurrency=settings.RAG_GRADE_CONCURRENCY,
        prefilter_similarity=settings.RAG_RELEVANCE_PREFILTER,
        risk_veto=settings.RAG_FAITHFULNESS_RISK_VETO,
        excerpt_chars=settings.RAG_EXCERPT_CHARS,
        answer_max_tokens=settings.RAG_ANSWER_MAX_TOKENS,
        refuse_unknown_names=settings.RAG_REFUSE_UNKNOWN_NAMES,
        hyde=settings.RAG_HYDE,
        read_on=settings.RAG_READ_ON,
    )


def execute_queued_run(run_id, trace_context: dict | None = None) -> None:
    """Execute the queued run `run_id` on this thread, publishing its events as they happen.

    The entry point of the executor's threads and of the Celery task. `trace_context` is the
    submitting request's trace carrier (observability/tracing.py), for the run's trace to link to.
    """
    close_old_connections()
    try:
        run = QueryRun.objects.get(pk=run_id)
        if run.status != QueryRun.Status.QUEUED:
            # Delivered twice, or failed while it waited (lost queue): never run it again.
            logger.warning("run %s is %s, not queued: not executing it", run_id, run.status)
            return
        execute_run(run, subscribers=[publish], trace_context=trace_context)
    except Exception:  # execute_run records failures itself; this is a bug net, never silent
        logger.exception("executing run %s crashed", run_id)
    finally:
        connections.close_all()  # this worker thread's connections; idle threads hold none


def execute_run(
    run: QueryRun,
    *,
    models: ChatModels | None = None,
    retriever=None,
    limits: GraphLimits | None = None,
    subscribers: list[Subscriber] | None = None,
    history: list[tuple[str, str]] | None = None,
    trace_context: dict | None = None,
) -> QueryRun:
    """Run the graph for `run`, storing every event; the run ends answered, refused or failed.

    `history` holds the earlier (question, answer) turns a follow-up is read with, oldest first;
    by default, the last RAG_THREAD_TURNS finished turns of the run's thread.
    """
    emitter = RunEmitter(run, subscribers)
    run_start(run=run)
    # Metrics, the run's trace and its log context: around the run, each node, each model call.
    with (
        observed_run(
            run, provider=settings.RAG_CHAT_PROVIDER, trace_context=trace_context
        ) as callbacks,
        executing(run.pk),
    ):
        _execute(
            run,
            emitter,
            models=models,
            retriever=retriever,
            limits=limits,
            history=history,
            callbacks=callbacks,
        )
    return run


def _execute(run, emitter, *, models, retriever, limits, history, callbacks) -> None:
    started = time.perf_counter()
    context = None
    try:
        if history is None:  # read inside the try: a failure here fails the run, visibly
            history = thread_history(run=run, turns=settings.RAG_THREAD_TURNS)
        embeddings = get_embeddings()
        context = GraphContext(
            models=models or get_chat_models(),
            retriever=retriever
            or build_retriever(mode=settings.RAG_RETRIEVAL_MODE, embeddings=embeddings),
            emitter=emitter,
            limits=limits or limits_from_settings(),
            deadline=time.monotonic() + settings.RAG_RUN_MAX_SECONDS,
            max_seconds=settings.RAG_RUN_MAX_SECONDS,
        )
        final = build_graph().invoke(
            {
                "query": run.query,
                "original_query": run.query,
                "history": history,
                "iteration_count": 0,
                "correction_count": 0,
            },
            context=context,
            # LangChain hands these down to every model call inside the graph.
            config={"callbacks": callbacks},
        )
        _finish(run, final, context, emitter, started, embeddings.model_id)
    except Exception as exc:  # any failure must end the run, visibly, never leave it running
        logger.exception("run %s failed", run.pk)
        message = f"{type(exc).__name__}: {exc}"
        metadata = _metadata(context, started, None) if context else None
        try:
            # The status first: if another process already ended the run (a sweeper that took
            # it for lost), its trace is closed and must get no second `done`. Status, `error`
            # and `done` are one write, so a finished run always has its `done`.
            with transaction.atomic():
                run_fail(run=run, error=message, response_metadata=metadata)
                # The trace streams to the run's owner: its message keeps the cause, not the
                # server's addresses or paths; staff read the whole error on the run.
                emitter.emit(EventKind.ERROR, {"message": public_message(message)})
                emitter.emit(EventKind.DONE, {"status": run.status})
        except IllegalTransition:
            logger.warning("run %s was already ended elsewhere; not recording: %s", run.pk, message)


def _finish(run, final, context, emitter, started, embedding_model) -> None:
    grade = final.get("answer_grade")
    context_docs = final.get("context_documents", [])
    draft = final.get("generation", "")
    if final.get("fallback"):
        status, reason = QueryRun.Status.REFUSED, "no_relevant_documents"
        names = final.get("unknown_names")
        answer = unknown_names_answer(names) if names else FALLBACK_ANSWER
    elif grade is not None and grade.declined:
        status, answer, reason = QueryRun.Status.REFUSED, NOT_COVERED_ANSWER, "not_in_documents"
    elif grade is not None and grade.faithful:
        status, answer, reason = QueryRun.Status.ANSWERED, draft, ""
    else:
        status, reason = QueryRun.Status.REFUSED, "unfaithful"
        answer = _refusal_text(grade, context.models.faithfulness_method)
    cited = {int(n) for n in _CITATION.findall(draft)}
    sources = (
        # Numbered as the prompts showed them, so [n] in the answer is source n here.
        [
            {"n": n, "cited": n in cited, **context_docs[n - 1].summary()}
            for n in usable_numbers(final)
        ]
        if status == QueryRun.Status.ANSWERED
        else []
    )
    metadata = _metadata(context, started, embedding_model)
    metadata.update(
        refusal_reason=reason,
        refined=final.get("correction_count", 0) > 0,
        sources=sources,
        passages=closest_passages(final) if status == QueryRun.Status.REFUSED else [],
        draft_answer=draft if reason in ("unfaithful", "not_in_documents") else "",
        # The draft refused before the run read on (RAG_READ_ON): withheld like the one above.
        first_draft_answer=final.get("read_on_from", ""),
        # The question's names that no chunk holds, when that is why it was refused.
        unknown_names=final.get("unknown_names", []) if final.get("fallback") else [],
        # What was answered, when it is not the question as asked (a condensed follow-up).
        standalone_question=final["original_query"] if final.get("asked_query") else "",
    )
    if grade is not None and grade.declined:
        grade = None  # nothing was checked: no score, no risk
    emitter.emit(
        EventKind.ANSWER,
        {
            "status": str(status),
            "answer": answer,
            "faithfulness_score": grade.faithfulness_score if grade else None,
            "hallucination_risk": grade.hallucination_risk if grade else "",
            "problematic_claims": grade.problematic_claims if grade else [],
            "refined": metadata["refined"],
            "refusal_reason": reason,
            "sources": sources,
            "passages": metadata["passages"],
            "metadata": {k: metadata[k] for k in ("total_ms", "tokens", "cost_usd", "models")},
        },
        node="",
    )
    # The outcome and `done` are one write: a crash between them cannot leave a finished run
    # whose streams wait for a `done` that never comes (the sweeper only looks at unfinished runs).
    with transaction.atomic():
        run_finish(
            run=run,
            status=status,
            answer=answer,
            faithfulness_score=grade.faithfulness_score if grade else None,
            hallucination_risk=grade.hallucination_risk if grade else "",
            iteration_count=final.get("iteration_count", 0),
            correction_count=final.get("correction_count", 0),
            response_metadata=metadata,
        )
        emitter.emit(EventKind.DONE, {"status": str(status)})


NOT_COVERED_ANSWER = (
    "The documentation I found does not answer this question. The closest passages are listed "
    "below: they are what the search found, not an answer. Try rephrasing the question, or check "
    "whether the relevant docs have been ingested."
)


def unknown_names_answer(names: list[str]) -> str:
    """The refusal of a question that names what the knowledge base never mentions."""
    quoted = listed([f"`{name}`" for name in names])
    return (
        f"The documentation does not mention {quoted}, so it cannot answer this question. The "
        "closest passages are listed below: they are what the search found, not an answer."
    )


PASSAGES = 3  # how many of the closest passages a refusal shows
PASSAGE_CHARS = 400


def closest_passages(final: dict) -> list[dict]:
    """The run's best-graded chunks (of any retrieval), with an excerpt, for a refusal to show."""
    judged = {g.doc.chunk_id: g for g in final.get("grades", []) if not g.prefiltered}
    judged.update(final.get("seen_grades", {}))
    # A chunk the judge was not asked about (the retrieval gate) ranks after every verdict.
    grades = sorted(
        judged.values(),
        key=lambda g: (g.score is None, -(g.score or 0.0), -g.doc.similarity),
    )
    passages = []
    for grade in grades[:PASSAGES]:
        text = " ".join(grade.doc.text.split())
        excerpt = text if len(text) <= PASSAGE_CHARS else text[: PASSAGE_CHARS - 1] + "…"
        passages.append(
            {
                **grade.doc.summary(),
                "relevance": None if grade.score is None else round(grade.score, 3),
                "excerpt": excerpt,
            }
        )
    return passages


def _refusal_text(grade, method: str) -> str:
    claims = list(grade.problematic_claims) if grade else []
    if method == "claims":
        # Its claims are the draft's own sentences: naming them would show the very claims the
        # refusal withholds. The specifics no document holds are safe to name.
        claims = [c for c in claims if c.endswith(MISSING)]
    claims = "; ".join(claims)
    detail = f" Unsupported claims: {claims}." if claims else ""
    return (
        "I can't give a reliable answer to this question: even after one revision, my draft "
        "made claims the documentation does not support, so I am not showing it."
        f"{detail} Try rephrasing the question, or check the documentation directly."
    )


def _metadata(context: GraphContext, started: float, embedding_model: str | None) -> dict:
    limits = context.limits
    return {
        "total_ms": round((time.perf_counter() - started) * 1000, 1),
        "node_ms": {node: round(ms, 1) for node, ms in context.timings.items()},
        "tokens": context.usage.tokens,
        "cost_usd": estimate_cost(context.usage.tokens, provider=settings.RAG_CHAT_PROVIDER),
        "models": {
            "provider": settings.RAG_CHAT_PROVIDER,
            **context.models.names,
            "embedding": embedding_model,
        },
        "settings": {
            "top_k": limits.top_k,
            "relevance_threshold": limits.relevance_threshold,
            "relevance_gate": limits.relevance_gate,
            "relevance_doubt_floor": limits.relevance_doubt_floor,
            "doubtful_answer_threshold": limits.doubtful_answer_threshold,
            "min_relevant_docs": limits.min_relevant_docs,
            "answer_confidence_threshold": limits.answer_confidence_threshold,
            "max_retrievals": limits.max_retrievals,
            "max_refinements": limits.max_refinements,
            "hyde": limits.hyde,
            "retrieval_mode": context.retriever.mode,
        },
    }
