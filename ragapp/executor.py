"""Where runs execute: outside the request, so a run finishes even if every browser leaves.

The embedded default is a bounded pool of worker threads in the web process
(`RAG_MAX_CONCURRENT_RUNS`); submissions beyond the bound wait in the pool's queue, they are
never rejected. A distributed task queue can replace it behind the same `submit` method.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from django.conf import settings
from django.db import close_old_connections, connections

logger = logging.getLogger(__name__)


class ThreadRunExecutor:
    """Runs queued runs on a bounded pool of worker threads in this process."""

    def __init__(self, max_workers: int):
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="rag-run")

    def submit(self, run_id) -> Future:
        """Queue the run `run_id` for execution."""
        return self._pool.submit(_execute, run_id)

    def shutdown(self, wait: bool = True) -> None:
        """Stop taking runs (tests, process exit)."""
        self._pool.shutdown(wait=wait)


def _execute(run_id) -> None:
    from ragapp.eventstream import publish
    from ragapp.models import QueryRun
    from ragapp.runner import execute_run

    close_old_connections()
    try:
        run = QueryRun.objects.get(pk=run_id)
        execute_run(run, subscribers=[publish])
    except Exception:  # execute_run records failures itself; this is a bug net, never silent
        logger.exception("executing run %s crashed", run_id)
    finally:
        connections.close_all()  # this worker thread's connections; idle threads hold none


_executor: ThreadRunExecutor | None = None
_lock = threading.Lock()


def get_executor() -> ThreadRunExecutor:
    """This process's run executor, created on first use."""
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadRunExecutor(settings.RAG_MAX_CONCURRENT_RUNS)
        return _executor
