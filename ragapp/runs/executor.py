"""Where runs execute: outside the request, so a run finishes even if every browser leaves.

Two executors behind one `submit(run_id)` method, chosen by RAG_EXECUTOR:
- `thread` (the embedded default): a bounded pool of worker threads in the web process
  (RAG_MAX_CONCURRENT_RUNS); submissions beyond the bound wait in the pool's queue.
- `celery`: a task on a Celery queue (Redis broker), executed by `celery worker` processes on any
  machine. The web processes then only accept runs and stream their traces.
Either way the run itself is executed by `runner.execute_queued_run`, which heartbeats.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from django.conf import settings

from ragapp.models import QueryRun
from ragapp.runs.runner import execute_queued_run
from ragapp.services import run_abort
from ragapp.trace.stream import publish

logger = logging.getLogger(__name__)


class RunExecutor(Protocol):
    def submit(self, run_id, trace_context: dict | None = None) -> object:
        """Have the queued run `run_id` executed, eventually, somewhere.

        `trace_context` carries the submitting request's trace (observability/tracing.py).
        """


class ThreadRunExecutor:
    """Runs queued runs on a bounded pool of worker threads in this process."""

    def __init__(self, max_workers: int):
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="rag-run")

    def submit(self, run_id, trace_context: dict | None = None) -> Future:
        return self._pool.submit(execute_queued_run, run_id, trace_context)

    def shutdown(self, wait: bool = True) -> None:
        """Stop taking runs (tests, process exit)."""
        self._pool.shutdown(wait=wait)


class CeleryRunExecutor:
    """Sends queued runs to the Celery workers through the broker."""

    def submit(self, run_id, trace_context: dict | None = None) -> None:
        # Imported here: Celery takes most of a second to import, and the thread executor (the
        # default) never needs it, so neither does every web process's start.
        from config.celery import EXECUTE_RUN_TASK, app

        try:
            # Sent by name: the web process needs the broker, not the task's code. The broker
            # may be restarting: retry briefly, then give up visibly.
            app.send_task(
                EXECUTE_RUN_TASK,
                args=[str(run_id)],
                # In the message itself, so the worker's trace of the run links to the request.
                kwargs={"trace_context": trace_context} if trace_context else {},
                retry=True,
                retry_policy={"max_retries": 3, "interval_start": 0.2, "interval_step": 0.5},
            )
        except Exception as exc:
            logger.exception("could not queue run %s", run_id)
            _fail_unqueued(run_id, f"The run could not be queued: {type(exc).__name__}: {exc}")


def _fail_unqueued(run_id, error: str) -> None:
    run_abort(run=QueryRun.objects.get(pk=run_id), error=error, publish=publish)


_executor: RunExecutor | None = None
_lock = threading.Lock()


def get_executor() -> RunExecutor:
    """This process's run executor (RAG_EXECUTOR), created on first use."""
    global _executor
    with _lock:
        if _executor is None:
            if settings.RAG_EXECUTOR == "celery":
                _executor = CeleryRunExecutor()
            else:
                _executor = ThreadRunExecutor(settings.RAG_MAX_CONCURRENT_RUNS)
        return _executor
