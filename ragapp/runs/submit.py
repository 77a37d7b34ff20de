"""Submitting a run: create the row, then hand it to the executor once the row is committed."""

from __future__ import annotations

from django.db import transaction

from ragapp.models import QueryRun
from ragapp.runs.executor import get_executor
from ragapp.services import run_create


def run_submit(*, query: str, owner=None) -> QueryRun:
    """Create a run and hand it to the executor once the row is committed."""
    run = run_create(query=query, owner=owner)
    transaction.on_commit(lambda: get_executor().submit(run.pk))
    return run
