"""Celery tasks (RAG_EXECUTOR=celery). Start workers with `celery -A config worker`."""

from __future__ import annotations

from config.celery import EXECUTE_RUN_TASK, app
from ragapp.runs.runner import execute_queued_run


@app.task(name=EXECUTE_RUN_TASK, ignore_result=True)
def execute_run_task(run_id: str, trace_context: dict | None = None) -> None:
    """Execute one queued run (the queue never retries it: see RAG_RUN_STALE_SECONDS).

    `trace_context`: the submitting request's W3C trace context, when tracing is on.
    """
    execute_queued_run(run_id, trace_context)
