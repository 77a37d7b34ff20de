"""Runs never stay unfinished forever: heartbeats, the sweep for lost runs, and lost queues."""

from datetime import timedelta

import pytest
from django.utils import timezone

from ragapp.models import QueryRun
from ragapp.runs.liveness import RunMonitor
from ragapp.services import run_create, run_start, runs_fail_lost, runs_heartbeat
from ragapp.trace.emitter import RunEmitter
from ragapp.trace.kinds import EventKind

pytestmark = pytest.mark.django_db


def started_run(heartbeat_age_s: float) -> QueryRun:
    run = run_start(run=run_create(query="How do I restart the worker?"))
    RunEmitter(run).emit(EventKind.RETRIEVE, {"query": run.query, "documents": []})
    QueryRun.objects.filter(pk=run.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=heartbeat_age_s)
    )
    return run


def test_a_run_without_heartbeat_is_failed_with_a_reason_and_a_closed_trace(
    settings, django_capture_on_commit_callbacks
):
    settings.RAG_RUN_STALE_SECONDS = 30
    lost, alive = started_run(45), started_run(10)
    published = []
    with django_capture_on_commit_callbacks(execute=True):  # events publish once committed
        failed = runs_fail_lost(publish=published.append)
    assert [run.pk for run in failed] == [lost.pk]
    lost.refresh_from_db()
    assert lost.status == QueryRun.Status.FAILED and lost.finished_at is not None
    assert "no heartbeat for 45 s" in lost.error and "killed or crashed" in lost.error
    trace = list(lost.events.values_list("seq", "kind"))
    assert trace == [(1, "retrieve"), (2, "error"), (3, "done")]  # the first event kept
    assert [event.kind for event in published] == ["error", "done"]
    alive.refresh_from_db()
    assert alive.status == QueryRun.Status.RUNNING and alive.events.count() == 1
    assert runs_fail_lost() == []  # a second sweep (another process) finds nothing to do


def test_heartbeats_keep_a_long_run_alive(settings):
    settings.RAG_RUN_STALE_SECONDS = 30
    run = started_run(45)
    assert runs_heartbeat(run_ids={run.pk}) == 1
    assert runs_fail_lost() == []
    run.refresh_from_db()
    assert run.status == QueryRun.Status.RUNNING


@pytest.mark.django_db(transaction=True)  # the monitor opens and closes its own connections
def test_the_monitor_beats_for_its_own_runs_and_sweeps_the_others(settings):
    settings.RAG_RUN_STALE_SECONDS = 30
    mine, orphan = started_run(45), started_run(45)
    monitor = RunMonitor(period=1)
    monitor.track(mine.pk)
    monitor.tick()
    mine.refresh_from_db()
    orphan.refresh_from_db()
    assert mine.status == QueryRun.Status.RUNNING
    assert orphan.status == QueryRun.Status.FAILED


def test_a_run_queued_too_long_is_failed_as_never_started(settings):
    settings.RAG_RUN_QUEUE_TIMEOUT_SECONDS = 60
    old, fresh = run_create(query="old question"), run_create(query="new question")
    QueryRun.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    assert [run.pk for run in runs_fail_lost()] == [old.pk]
    old.refresh_from_db()
    assert old.status == QueryRun.Status.FAILED and "never started" in old.error
    assert list(old.events.values_list("kind", flat=True)) == ["error", "done"]
    fresh.refresh_from_db()
    assert fresh.status == QueryRun.Status.QUEUED


@pytest.mark.django_db(transaction=True)
def test_a_run_delivered_twice_is_not_executed_again(settings):
    from ragapp.runs.executor import execute_queued_run

    run = started_run(0)
    execute_queued_run(run.pk)  # e.g. a broker redelivery after the first worker took it
    run.refresh_from_db()
    assert run.status == QueryRun.Status.RUNNING and run.events.count() == 1


def test_a_run_that_cannot_be_queued_fails_visibly(settings):
    from ragapp.runs.executor import CeleryRunExecutor

    settings.CELERY_BROKER_URL = "redis://127.0.0.1:9/0"  # nothing listens on the discard port
    from config.celery import app

    app.conf.broker_url = settings.CELERY_BROKER_URL
    run = run_create(query="How do I restart the worker?")
    CeleryRunExecutor().submit(run.pk)
    run.refresh_from_db()
    assert run.status == QueryRun.Status.FAILED
    assert run.error.startswith("The run could not be queued")
    assert list(run.events.values_list("kind", flat=True)) == ["error", "done"]


def test_a_hung_run_is_failed_even_while_its_process_beats(settings):
    from ragapp.services.runs import hung_after_seconds

    settings.RAG_RUN_STALE_SECONDS = 30
    settings.RAG_RUN_MAX_SECONDS = 60
    settings.RAG_LLM_TIMEOUT, settings.RAG_LLM_MAX_RETRIES = 10, 1
    assert hung_after_seconds() == 80  # the limit, plus one model call's two attempts
    hung, slow = started_run(0), started_run(0)  # both beat right now
    QueryRun.objects.filter(pk=hung.pk).update(started_at=timezone.now() - timedelta(seconds=81))
    QueryRun.objects.filter(pk=slow.pk).update(started_at=timezone.now() - timedelta(seconds=70))

    assert [run.pk for run in runs_fail_lost()] == [hung.pk]
    hung.refresh_from_db()
    assert hung.status == QueryRun.Status.FAILED
    assert "past its limit of 60 s (RAG_RUN_MAX_SECONDS)" in hung.error and "hung" in hung.error
    slow.refresh_from_db()
    assert slow.status == QueryRun.Status.RUNNING
