"""Celery tasks (RAG_EXECUTOR=celery). Start workers with `celery -A config worker`."""

from __future__ import annotations

from config.celery import app
from ragapp.executor import execute_queued_run


@app.task(name="ragapp.execute_run", ignore_result=True)
def execute_run_task(run_id: str) -> None:
    """Execute one queued run (the queue never retries it: see RAG_RUN_STALE_SECONDS)."""
    execute_queued_run(run_id)
