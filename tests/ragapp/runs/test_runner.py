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


class UnreachableRetriever:
    mode = "vector"

    def search(self, query, *, k, depth=None, companions=0):
        raise ConnectionError("no route to the vector store at http://10.9.8.7:6333/collections")


def test_the_error_event_keeps_the_cause_and_withholds_the_address(knowledge_base, fake_chat):
    run = execute_run(run_create(query="How do I set up alpha?"), retriever=UnreachableRetriever())

    run.refresh_from_db()
    error_event = run.events.get(kind="error")
    assert run.status == QueryRun.Status.FAILED
    assert "http://10.9.8.7:6333/collections" in run.error  # whole, for staff
    assert "no route to the vector store" in error_event.payload["message"]
    assert "10.9.8.7" not in error_event.payload["message"]


def test_a_run_past_its_time_limit_fails_with_the_reason_in_its_trace(
    knowledge_base, fake_chat, settings
):
    from ragapp.providers.chat import clear_chat_models_cache

    settings.RAG_RUN_MAX_SECONDS = 1.0
    settings.RAG_FAKE_CHAT_DELAY_MS = 600  # each model call; a run makes three or more
    clear_chat_models_cache()
    run = execute_run(run_create(query="How do I set up alpha?"))

    run.refresh_from_db()
    kinds = list(run.events.order_by("seq").values_list("kind", flat=True))
    assert run.status == QueryRun.Status.FAILED
    assert "longer than its limit of 1 s (RAG_RUN_MAX_SECONDS)" in run.error
    assert kinds[0] == "retrieve" and kinds[-2:] == ["error", "done"]
    assert "answer" not in kinds
    message = run.events.get(kind="error").payload["message"]
    assert "RAG_RUN_MAX_SECONDS" in message
