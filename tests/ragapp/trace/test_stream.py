"""The live trace channel: storage backed by TraceEvent, ownership, and the run executor."""

import json

import pytest
from django.urls import reverse

from ragapp.models import QueryRun, TraceEvent
from ragapp.services import run_create
from ragapp.trace.stream import (
    RunChannelManager,
    TraceEventStorage,
    channel_for,
    event_message,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(users):
    run = run_create(query="How?", owner=users["owner"])
    for seq, kind in enumerate(["retrieve", "grade", "grade_docs", "generate"], 1):
        TraceEvent.objects.create(run=run, seq=seq, kind=kind, node=kind, payload={"n": seq})
    return run


def test_storage_reads_the_trace_rows_after_a_seq(run):
    storage = TraceEventStorage()
    channel = channel_for(run.pk)
    assert storage.get_current_id(channel) == 4
    events = storage.get_events(channel, 2)
    assert [(e.id, e.type) for e in events] == [(3, "grade_docs"), (4, "generate")]
    assert json.loads(events[0].data)["payload"] == {"n": 3}
    assert storage.get_events(channel, 4) == []
    assert [e.id for e in storage.get_events(channel, 0, limit=2)] == [1, 2]


def test_storage_writes_nothing_when_an_event_is_published(run):
    storage = TraceEventStorage()
    row = TraceEvent.objects.get(run=run, seq=3)
    event = storage.append_event(channel_for(run.pk), row.kind, json.dumps(event_message(row)))
    assert event.id == 3
    assert TraceEvent.objects.filter(run=run).count() == 4


def test_a_run_without_events_starts_at_zero(users):
    empty = run_create(query="Nothing yet", owner=users["owner"])
    assert TraceEventStorage().get_current_id(channel_for(empty.pk)) == 0


def test_only_the_owner_or_staff_may_read_a_run_channel(run, users):
    manager = RunChannelManager()
    channel = channel_for(run.pk)
    assert manager.can_read_channel(users["owner"], channel)
    assert manager.can_read_channel(users["staff"], channel)
    assert not manager.can_read_channel(users["other"], channel)
    assert not manager.can_read_channel(None, channel)
    assert not manager.can_read_channel(users["staff"], "run-not-a-uuid")
    assert not manager.can_read_channel(users["staff"], "news")


@pytest.mark.parametrize("who, status", [("other", 404), ("staff", 200), ("owner", 200)])
def test_the_event_stream_endpoint_enforces_ownership(client, run, users, who, status):
    client.force_login(users[who])
    response = client.get(reverse("run-events", args=[run.pk]))
    assert response.status_code == status
    if status == 200:
        assert response["Content-Type"].startswith("text/event-stream")
        response.close()


def test_anonymous_is_refused(client, run):
    response = client.get(reverse("run-events", args=[run.pk]))
    assert response.status_code == 403


@pytest.mark.django_db(transaction=True)
def test_a_submitted_run_executes_in_the_background_and_is_stored(settings, tmp_path):
    from django.core.management import call_command

    from ragapp.providers.chat import clear_chat_models_cache
    from ragapp.runs.executor import get_executor
    from ragapp.runs.submit import run_submit

    settings.RAG_CHAT_PROVIDER = "fake"
    clear_chat_models_cache()
    (tmp_path / "guide.md").write_text("# Guide\n\nRestart the worker with `restart worker`.\n")
    call_command("ingest_docs", str(tmp_path), stdout=None)
    run = run_submit(query="How do I restart the worker?")  # autocommit: submitted at once
    executor = get_executor()
    executor.shutdown(wait=True)  # wait for the queued run to finish
    import ragapp.runs.executor as module

    module._executor = None
    run.refresh_from_db()
    assert run.status == QueryRun.Status.ANSWERED
    kinds = list(run.events.values_list("kind", flat=True))
    assert kinds[0] == "retrieve" and kinds[-1] == "done"
    clear_chat_models_cache()


def test_events_already_sent_on_a_connection_are_dropped():
    import asyncio

    from ragapp.trace.stream import once_in_order

    channel = "run-abc"

    async def source():
        yield "event: stream-open\ndata:\n\n"
        yield f"event: retrieve\nid: {channel}:1\ndata: {{}}\n\nevent: grade\nid: {channel}:2\n"
        yield "data: {}\n\n"  # a block split across chunks
        yield f"event: grade\nid: {channel}:2\ndata: {{}}\n\n"  # relayed live a second time
        yield "event: keep-alive\ndata:\n\n"
        yield f"event: done\nid: {channel}:3\ndata: {{}}\n\n"

    async def collect(last_seq):
        return "".join([chunk async for chunk in once_in_order(source(), channel, last_seq)])

    text = asyncio.run(collect(0))
    assert [line for line in text.splitlines() if line.startswith("id:")] == [
        f"id: {channel}:1",
        f"id: {channel}:2",
        f"id: {channel}:3",
    ]
    assert "keep-alive" in text and "stream-open" in text
    resumed = asyncio.run(collect(2))  # Last-Event-ID says 2 was seen before
    assert [line for line in resumed.splitlines() if line.startswith("id:")] == [f"id: {channel}:3"]


@pytest.mark.django_db(transaction=True)
def test_submissions_beyond_the_worker_bound_queue_and_all_finish(settings, tmp_path):
    from django.core.management import call_command

    from ragapp.providers.chat import clear_chat_models_cache
    from ragapp.runs.executor import ThreadRunExecutor

    settings.RAG_CHAT_PROVIDER = "fake"
    clear_chat_models_cache()
    (tmp_path / "guide.md").write_text("# Guide\n\nBackups run nightly at two.\n")
    call_command("ingest_docs", str(tmp_path), stdout=None)
    executor = ThreadRunExecutor(max_workers=1)
    runs = [run_create(query=f"When do backups run? ({i})") for i in range(4)]
    futures = [executor.submit(run.pk) for run in runs]
    assert sum(not f.done() for f in futures) >= 2  # one worker: the rest wait, none refused
    executor.shutdown(wait=True)
    statuses = {QueryRun.objects.get(pk=run.pk).status for run in runs}
    assert statuses == {QueryRun.Status.ANSWERED}
    clear_chat_models_cache()


@pytest.mark.django_db(transaction=True)
def test_a_gap_in_the_live_events_is_filled_from_the_database_in_order():
    """An event published while the Redis relay was away is read back before its successor."""
    import asyncio

    from ragapp.trace.stream import channel_for, once_in_order

    run = run_create(query="How do I restart the worker?")
    for seq, kind in enumerate(["retrieve", "grade", "grade", "grade_docs"], 1):
        TraceEvent.objects.create(run=run, seq=seq, kind=kind, payload={"n": seq})
    channel = channel_for(run.pk)

    async def source():  # 2 and 3 never arrived live
        yield f"event: retrieve\nid: {channel}:1\ndata: {{}}\n\n"
        yield f"event: grade_docs\nid: {channel}:4\ndata: {{}}\n\n"

    async def collect():
        return "".join([chunk async for chunk in once_in_order(source(), channel, 0)])

    text = asyncio.run(collect())
    ids = [line for line in text.splitlines() if line.startswith("id:")]
    assert ids == [f"id: {channel}:{seq}" for seq in (1, 2, 3, 4)]
    assert '"payload": {"n": 2}' in text and '"payload": {"n": 3}' in text


@pytest.mark.django_db(transaction=True)
def test_a_keep_alive_catches_up_a_lost_done_and_closes_the_stream():
    """The last events were never relayed: the next keep-alive reads them from the database."""
    import asyncio

    from ragapp.trace.stream import channel_for, once_in_order

    run = run_create(query="How do I restart the worker?")
    for seq, kind in enumerate(["retrieve", "answer", "done"], 1):
        TraceEvent.objects.create(run=run, seq=seq, kind=kind, payload={"n": seq})
    channel = channel_for(run.pk)

    async def source():
        yield f"event: retrieve\nid: {channel}:1\ndata: {{}}\n\n"
        yield "event: keep-alive\ndata:\n\n"
        yield "event: keep-alive\ndata:\n\n"  # never reached: the stream closed after done

    async def collect():
        stream = once_in_order(source(), channel, 0, close_on_done=True)
        return "".join([chunk async for chunk in stream])

    text = asyncio.run(collect())
    ids = [line for line in text.splitlines() if line.startswith("id:")]
    assert ids == [f"id: {channel}:{seq}" for seq in (1, 2, 3)]
    assert "keep-alive" not in text  # closed at done, before passing the keep-alive on
    assert text.rstrip().split("\n\n")[-1].startswith("event: done\n")
