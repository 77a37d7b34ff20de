"""Submitting a run: check the limits, create the row, hand it to the executor once committed."""

from __future__ import annotations

from django.conf import settings
from django.db import connection, transaction

from ragapp.models import QueryRun
from ragapp.observability import tracing
from ragapp.runs.executor import get_executor
from ragapp.runs.reuse import run_reuse
from ragapp.services import run_create
from ragapp.trace.stream import publish

ACTIVE = (QueryRun.Status.QUEUED, QueryRun.Status.RUNNING)
# Any constant works; it only has to be the same in every process.
_SUBMIT_LOCK_KEY = 0x5241_4732  # "RAG2"


class RunLimitReached(Exception):
    """A run was not accepted: the user has too many active runs, or the queue is full.

    `retry_after` is a hint in seconds; the message says which limit and what to do.
    """

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


def run_submit(*, query: str, owner=None, thread=None, fresh: bool = False) -> QueryRun:
    """Create a run and hand it to the executor once the row is committed.

    Unless `fresh`, a question an earlier run already answered may get that answer at once
    (ragapp/runs/reuse.py): the run is stored answered, never queued, and no limit applies, as
    it takes no executor's time.

    Raises RunLimitReached when `owner` already has RAG_MAX_ACTIVE_RUNS_PER_USER runs queued or
    running, or RAG_MAX_QUEUED_RUNS runs wait for every user together. The queued runs in the
    database are the queue, whichever executor serves it, so the bound holds across processes.
    With a `thread` the run continues it (see run_create); without one it starts a new thread.
    """
    if not fresh and (
        reused := run_reuse(query=query, owner=owner, thread=thread, subscribers=[publish])
    ):
        return reused
    with transaction.atomic():
        # Checks and insert under one lock: two submissions at once cannot both see room.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_SUBMIT_LOCK_KEY])
        _check_room(owner)
        run = run_create(query=query, owner=owner, thread=thread)
        # Captured now, inside the request: the run's trace links to the request's span.
        trace_context = tracing.capture()
        transaction.on_commit(lambda: get_executor().submit(run.pk, trace_context))
    return run


def _check_room(owner) -> None:
    if owner is not None:
        active = QueryRun.objects.filter(owner=owner, status__in=ACTIVE).count()
        limit = settings.RAG_MAX_ACTIVE_RUNS_PER_USER
        if active >= limit:
            raise RunLimitReached(
                f"You have {active} questions being answered; the limit is {limit}. Wait for one "
                "to finish, then ask again.",
                retry_after=15,
            )
    queued = QueryRun.objects.filter(status=QueryRun.Status.QUEUED).count()
    if queued >= settings.RAG_MAX_QUEUED_RUNS:
        raise RunLimitReached(
            f"The assistant is busy: {queued} questions are waiting. Try again in a minute.",
            retry_after=60,
        )
