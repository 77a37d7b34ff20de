"""The runner never leaves a finished run without its `done` event, whatever write fails."""

import pytest
from django.db import DatabaseError

from ragapp.models import QueryRun
from ragapp.runs.runner import execute_run
from ragapp.services import run_create
from ragapp.trace.emitter import RunEmitter
from ragapp.trace.kinds import EventKind

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def first_done_write_fails(monkeypatch):
    """The first `done` event cannot be stored (the database went away at that moment)."""
    emit = RunEmitter.emit
    failures = []

    def failing_once(self, kind, payload, **kwargs):
        if kind == EventKind.DONE and not failures:
            failures.append(kind)
            raise DatabaseError("connection lost while writing done")
        return emit(self, kind, payload, **kwargs)

    monkeypatch.setattr(RunEmitter, "emit", failing_once)
    return failures


def test_a_failed_done_write_does_not_leave_a_finished_run_without_done(
    knowledge_base, fake_chat, first_done_write_fails
):
    run = execute_run(run_create(query="How do I set up alpha?"))

    run.refresh_from_db()
    trace = list(run.events.order_by("seq").values_list("seq", "kind"))
    kinds = [kind for _, kind in trace]
    assert first_done_write_fails == [EventKind.DONE]
    # The answer's status and its `done` were one write: neither stayed, so the run failed,
    # visibly, and its trace closes with one `done` after the error.
    assert run.status == QueryRun.Status.FAILED
    assert "connection lost while writing done" in run.error
    assert kinds.count("done") == 1 and kinds[-2:] == ["error", "done"]
    assert [seq for seq, _ in trace] == list(range(1, len(trace) + 1))  # no gap either
