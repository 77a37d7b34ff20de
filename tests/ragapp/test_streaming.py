"""The live trace over a real uvicorn server: every event once, in order, and resumable."""

import json
import re
import time
from contextlib import ExitStack

import httpx
import pytest

from ragapp.models import QueryRun, TraceEvent
from tests.ragapp.live_server import read_closed_stream, signed_in

pytestmark = pytest.mark.django_db(transaction=True)


def ask(client: httpx.Client, base: str, question: str) -> str:
    page = client.get("/").text
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    response = client.post(
        "/", data={"query": question, "csrfmiddlewaretoken": token}, headers={"Referer": base + "/"}
    )
    assert response.status_code == 302, response.text
    return response.headers["location"].strip("/").split("/")[-1]


def read_events(client: httpx.Client, run_id: str, *, last_id: str, stop_after: int | None = None):
    """Read SSE events (skipping keep-alives) until `done`, or until `stop_after` events."""
    seen = []
    headers = {"Last-Event-ID": last_id, "Accept": "text/event-stream"}
    with client.stream("GET", f"/runs/{run_id}/events/", headers=headers) as response:
        assert response.status_code == 200
        kind, data = None, None
        for line in response.iter_lines():
            if line.startswith("event:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                data = line.split(":", 1)[1].strip()
            elif line == "" and kind and data:
                if kind not in ("keep-alive", "stream-open"):
                    seen.append(json.loads(data))
                    if kind == "done" or (stop_after and len(seen) >= stop_after):
                        return seen
                kind, data = None, None
    return seen


def test_the_stream_delivers_every_stored_event_once_and_in_order(server):
    client = signed_in(server)
    run_id = ask(client, server, "How do I restart the worker?")
    events = read_events(client, run_id, last_id=f"run-{run_id}:0")
    seqs = [e["seq"] for e in events]
    stored = list(TraceEvent.objects.filter(run_id=run_id).values_list("seq", "kind"))
    assert seqs == list(range(1, len(stored) + 1))
    assert [(e["seq"], e["kind"]) for e in events] == stored
    assert events[-1]["kind"] == "done"
    assert QueryRun.objects.get(pk=run_id).status == QueryRun.Status.ANSWERED


def test_a_dropped_connection_resumes_with_last_event_id_without_gaps(server):
    client = signed_in(server)
    run_id = ask(client, server, "How do I restart the worker?")
    first = read_events(client, run_id, last_id=f"run-{run_id}:0", stop_after=2)
    assert [e["seq"] for e in first] == [1, 2]
    assert QueryRun.objects.get(pk=run_id).status in ("queued", "running")  # truly mid-run
    rest = read_events(client, run_id, last_id=f"run-{run_id}:{first[-1]['seq']}")
    seqs = [e["seq"] for e in first + rest]
    assert seqs == list(range(1, len(seqs) + 1))
    assert rest[-1]["kind"] == "done"
    assert len(seqs) == TraceEvent.objects.filter(run_id=run_id).count()


def test_another_user_cannot_read_the_stream(server, django_user_model):
    client = signed_in(server)
    run_id = ask(client, server, "How do I restart the worker?")
    django_user_model.objects.create_user("mallory", password="pw-mallory-123")
    intruder = signed_in(server, "mallory", "pw-mallory-123")
    assert intruder.get(f"/runs/{run_id}/events/").status_code == 404
    assert intruder.get(f"/runs/{run_id}/").status_code == 404


def test_the_stream_of_a_finished_run_ends_and_then_says_204(server):
    """A finished run's stream closes after `done`; resumed after `done`, it is a 204."""
    client = signed_in(server)
    run_id = ask(client, server, "How do I restart the worker?")
    read_events(client, run_id, last_id=f"run-{run_id}:0")  # until done: the run has finished
    total = TraceEvent.objects.filter(run_id=run_id).count()

    with client.stream("GET", f"/runs/{run_id}/events/") as response:  # no resume point
        events, _ = read_closed_stream(response)  # fails unless the server closes the stream
    assert [e["seq"] for e in events] == list(range(1, total + 1))
    assert events[-1]["kind"] == "done"

    after_done = client.get(
        f"/runs/{run_id}/events/", headers={"Last-Event-ID": f"run-{run_id}:{total}"}
    )
    assert after_done.status_code == 204


@pytest.mark.parametrize("server", [{"RAG_MAX_STREAMS_PER_USER": "2"}], indirect=True)
def test_a_user_holds_at_most_the_capped_number_of_streams(server, django_user_model):
    from ragapp.services import run_create

    client = signed_in(server)
    # A queued run nobody executes: its stream stays open, waiting for live events.
    run = run_create(query="waiting", owner=django_user_model.objects.get(username="alice"))
    url, sse = f"/runs/{run.pk}/events/", {"Accept": "text/event-stream"}
    with ExitStack() as first, ExitStack() as second:
        assert first.enter_context(client.stream("GET", url, headers=sse)).status_code == 200
        assert second.enter_context(client.stream("GET", url, headers=sse)).status_code == 200
        refused = client.get(url, headers=sse)
        assert refused.status_code == 429 and "close one first" in refused.text
        assert refused.headers["Retry-After"]

        first.close()  # the browser tab closes: its slot comes back once the server sees it
        statuses = []
        for _ in range(100):
            with client.stream("GET", url, headers=sse) as again:
                statuses.append(again.status_code)
            if statuses[-1] == 200:
                break
            time.sleep(0.1)
        assert statuses[-1] == 200, statuses
