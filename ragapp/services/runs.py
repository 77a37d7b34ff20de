"""Writes: query runs and their status. Status moves only here, and only along legal edges."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ragapp.models import THREAD_TITLE_CHARS, Feedback, QueryRun, Thread, TraceEvent
from ragapp.selectors import knowledge_base_version
from ragapp.services.gaps import question_hash
from ragapp.trace.emitter import RunEmitter
from ragapp.trace.kinds import EventKind
from ragapp.trace.redaction import public_message

Status = QueryRun.Status

# queued -> running -> answered | refused | failed; a queued run may also fail (never started).
LEGAL_TRANSITIONS: dict[str, frozenset[str]] = {
    Status.QUEUED: frozenset({Status.RUNNING, Status.FAILED}),
    Status.RUNNING: frozenset({Status.ANSWERED, Status.REFUSED, Status.FAILED}),
    Status.ANSWERED: frozenset(),
    Status.REFUSED: frozenset(),
    Status.FAILED: frozenset(),
}


# How the sweeper's reason for a run whose process died begins (`eval_rag --resume` asks such a
# run's question again: the death was not the product's answer).
LOST_PROCESS = "The process executing this run stopped"


class IllegalTransition(Exception):
    """A status change the run's lifecycle does not allow."""


def clean_query(query: object) -> str:
    """The query as stored: a non-empty string within RAG_MAX_QUERY_CHARS, else ValidationError."""
    if not isinstance(query, str):
        raise ValidationError("The query must be text.")
    if "\x00" in query:
        raise ValidationError("The query must not contain NUL characters.")
    if not query.strip():
        raise ValidationError("The query is empty.")
    if len(query) > settings.RAG_MAX_QUERY_CHARS:
        limit = settings.RAG_MAX_QUERY_CHARS
        raise ValidationError(f"The query is {len(query):,} characters; the limit is {limit:,}.")
    return query


def run_create(
    *, query: str, owner=None, evaluation=None, thread=None, kb_version: int | None = None
) -> QueryRun:
    """Create a queued run for `query` (validated), part of `evaluation` if given.

    With a `thread` (its owner's: the caller checked access) the run continues it, and the
    thread moves to the top of its owner's history; without one, the run starts a new thread.
    The run records the knowledge base's version now (or `kb_version`, for a reused answer).
    """
    query = clean_query(query)
    if thread is None:
        thread = Thread.objects.create(owner=owner, title=query[:THREAD_TITLE_CHARS])
    else:
        if thread.owner_id != getattr(owner, "pk", None):
            # Staff may read anyone's thread, but a run is always its asker's: never post into
            # someone else's conversation.
            raise ValidationError("This thread belongs to someone else.")
        Thread.objects.filter(pk=thread.pk).update(updated_at=timezone.now())
    return QueryRun.objects.create(
        query=query,
        owner=owner,
        evaluation=evaluation,
        thread=thread,
        query_hash=question_hash(query),
        # Read before the run retrieves anything: the content it sees is this version or newer,
        # so a stale label can only make reuse miss, never reuse an answer of older documents.
        kb_version=knowledge_base_version() if kb_version is None else kb_version,
    )


def _move(run: QueryRun, target: str, **fields) -> QueryRun:
    # One conditional UPDATE is the compare-and-set: it only matches while the stored status is
    # one that may move to `target`, so two processes can never both make the same move.
    sources = [status for status, targets in LEGAL_TRANSITIONS.items() if target in targets]
    moved = QueryRun.objects.filter(pk=run.pk, status__in=sources).update(status=target, **fields)
    if not moved:
        current = QueryRun.objects.filter(pk=run.pk).values_list("status", flat=True).first()
        raise IllegalTransition(f"run {run.pk}: {current} -> {target} is not allowed")
    run.status = target
    for name, value in fields.items():
        setattr(run, name, value)
    return run


def run_start(*, run: QueryRun) -> QueryRun:
    """queued -> running."""
    now = timezone.now()
    return _move(run, Status.RUNNING, started_at=now, heartbeat_at=now)


def run_finish(
    *,
    run: QueryRun,
    status: str,
    answer: str,
    faithfulness_score: float | None,
    hallucination_risk: str,
    iteration_count: int,
    correction_count: int,
    response_metadata: dict,
) -> QueryRun:
    """running -> answered | refused, with the outcome."""
    if status not in (Status.ANSWERED, Status.REFUSED):
        raise IllegalTransition(f"run_finish needs answered or refused, not {status}")
    return _move(
        run,
        status,
        answer=answer,
        faithfulness_score=faithfulness_score,
        hallucination_risk=hallucination_risk,
        iteration_count=iteration_count,
        correction_count=correction_count,
        response_metadata=response_metadata,
        finished_at=timezone.now(),
    )


def run_answer_reused(
    *, run: QueryRun, source: QueryRun, reuse: dict, subscribers=None
) -> QueryRun:
    """queued -> running -> answered at once with `source`'s answer and sources, audited.

    The trace is `reuse` (the `reuse` payload: the source, the match, the similarity and the
    index version), then `answer` and `done`, all written in one transaction. Only the answer,
    its verdict and its sources are copied: never the source's owner, its question when another
    user asked it, or its feedback.
    """
    started = timezone.now()
    source_answer = (
        TraceEvent.objects.filter(run=source, kind=EventKind.ANSWER).values_list(
            "payload", flat=True
        )
    ).first() or {}
    kept = {k: source.response_metadata.get(k) for k in ("sources", "refined", "models")}
    with transaction.atomic():
        run_start(run=run)
        emitter = RunEmitter(run, subscribers)
        emitter.emit(EventKind.REUSE, reuse)
        total_ms = round((timezone.now() - started).total_seconds() * 1000, 1)
        metadata = {
            "total_ms": total_ms,
            "node_ms": {},
            "tokens": {},  # no model was called
            "cost_usd": 0.0,
            "models": kept["models"] or {},
            "refusal_reason": "",
            "refined": bool(kept["refined"]),
            "sources": kept["sources"] or [],
            "passages": [],
            "draft_answer": "",
            "first_draft_answer": "",
            "standalone_question": "",
            "reuse": {k: reuse[k] for k in ("match", "similarity", "index_version")},
        }
        emitter.emit(
            EventKind.ANSWER,
            {
                "status": str(Status.ANSWERED),
                "answer": source.answer,
                "faithfulness_score": source.faithfulness_score,
                "hallucination_risk": source.hallucination_risk,
                "problematic_claims": source_answer.get("problematic_claims", []),
                "refined": metadata["refined"],
                "refusal_reason": "",
                "sources": metadata["sources"],
                "passages": [],
                "metadata": {k: metadata[k] for k in ("total_ms", "tokens", "cost_usd", "models")},
            },
        )
        _move(
            run,
            Status.ANSWERED,
            answer=source.answer,
            faithfulness_score=source.faithfulness_score,
            hallucination_risk=source.hallucination_risk,
            response_metadata=metadata,
            reused_from=source,
            finished_at=timezone.now(),
        )
        emitter.emit(EventKind.DONE, {"status": str(Status.ANSWERED)})
    return run


def run_fail(*, run: QueryRun, error: str, response_metadata: dict | None = None) -> QueryRun:
    """queued | running -> failed, saying why."""
    fields = {"error": error[:5000], "finished_at": timezone.now()}
    if response_metadata is not None:
        fields["response_metadata"] = response_metadata
    return _move(run, Status.FAILED, **fields)


def runs_heartbeat(*, run_ids) -> int:
    """Mark the running runs `run_ids` as alive now; return how many were marked."""
    if not run_ids:
        return 0
    return QueryRun.objects.filter(pk__in=list(run_ids), status=Status.RUNNING).update(
        heartbeat_at=timezone.now()
    )


def hung_after_seconds() -> float:
    """How long after it started a run counts as hung although its process still beats.

    The runner stops a run at the first step after RAG_RUN_MAX_SECONDS; one model call already
    under way may still take its timeout for each of its attempts.
    """
    one_call = settings.RAG_LLM_TIMEOUT * (settings.RAG_LLM_MAX_RETRIES + 1)
    return settings.RAG_RUN_MAX_SECONDS + one_call


def runs_fail_lost(*, publish=None) -> list[QueryRun]:
    """Fail the runs whose process is gone, saying why; return them.

    A running run whose heartbeat is older than RAG_RUN_STALE_SECONDS lost the process executing
    it (killed, crashed, its machine gone); a run queued longer than
    RAG_RUN_QUEUE_TIMEOUT_SECONDS lost its queue; a running run older than `hung_after_seconds`
    hung, even if its process still beats. Each gets an `error` then a `done` event after
    the events it already has, so its stream closes and its trace says what happened. Any process
    may call this: the conditional status update lets exactly one of them fail each run.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.RAG_RUN_STALE_SECONDS)
    overdue = now - timedelta(seconds=hung_after_seconds())
    unfinished = QueryRun.objects.filter(status__in=(Status.QUEUED, Status.RUNNING))
    lost = unfinished.filter(
        Q(status=Status.RUNNING, heartbeat_at__lt=stale)
        | Q(status=Status.RUNNING, heartbeat_at__isnull=True, started_at__lt=stale)
        | Q(status=Status.RUNNING, started_at__lt=overdue)
        | Q(
            status=Status.QUEUED,
            created_at__lt=now - timedelta(seconds=settings.RAG_RUN_QUEUE_TIMEOUT_SECONDS),
        )
    )
    failed = []
    for run in lost.only("pk", "status", "heartbeat_at", "started_at", "created_at"):
        if run.status == Status.RUNNING and run.started_at and run.started_at < overdue:
            error = (
                f"The run was still going {(now - run.started_at).total_seconds():.0f} s after it "
                f"started, past its limit of {settings.RAG_RUN_MAX_SECONDS:.0f} s "
                "(RAG_RUN_MAX_SECONDS) and the longest one model call may take: it hung."
            )
        elif run.status == Status.RUNNING:
            seen = run.heartbeat_at or run.started_at
            error = (
                f"{LOST_PROCESS} (no heartbeat for "
                f"{(now - seen).total_seconds():.0f} s): it was killed or crashed."
            )
        else:
            error = (
                f"The run never started: it waited in the queue for more than "
                f"{settings.RAG_RUN_QUEUE_TIMEOUT_SECONDS:.0f} s."
            )
        try:
            run_abort(run=run, error=error, publish=publish)
        except IllegalTransition:
            continue  # it finished, or another process failed it, meanwhile
        failed.append(run)
    return failed


def run_abort(*, run: QueryRun, error: str, publish=None) -> QueryRun:
    """Fail a run from outside its execution: status, reason, then `error` and `done` events.

    For runs whose executor is gone or never got them; a failure inside the graph is recorded by
    the runner itself. The events follow any the run already has, so its stream closes.
    """
    with transaction.atomic():  # the status and the closing events stand or fall together
        run_fail(run=run, error=error)
        emitter = RunEmitter(run, [publish] if publish else None)
        emitter.emit(EventKind.ERROR, {"message": public_message(error)})
        emitter.emit(EventKind.DONE, {"status": str(Status.FAILED)})
    return run


def feedback_submit(*, run: QueryRun, user, rating: int, comment: str = ""):
    """Record (or replace) `user`'s thumbs up/down on a finished run."""
    if run.status not in (Status.ANSWERED, Status.REFUSED, Status.FAILED):
        raise ValidationError("Feedback is for finished runs.")
    if rating not in (Feedback.Rating.UP, Feedback.Rating.DOWN):
        raise ValidationError("Rating must be up (1) or down (-1).")
    feedback, _ = Feedback.objects.update_or_create(
        run=run, user=user, defaults={"rating": rating, "comment": comment[:2000]}
    )
    return feedback
