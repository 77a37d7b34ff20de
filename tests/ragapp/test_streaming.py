"""The live trace over a real uvicorn server: every event once, in order, and resumable."""

import json
import os
import re
import socket
import subprocess
import sys
import time
from io import StringIO
from urllib.parse import quote

import httpx
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection

from ragapp.models import QueryRun, TraceEvent

pytestmark = pytest.mark.django_db(transaction=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def server(tmp_path, django_user_model):
    """uvicorn serving the app on the test database, with the fake models."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ops.md").write_text(
        "# Ops\n\n## Restart\n\nRestart the worker with `systemctl restart worker`.\n"
    )
    call_command("ingest_docs", str(tmp_path / "docs"), stdout=StringIO())
    django_user_model.objects.create_user("alice", password="pw-alice-123")
    params = connection.get_connection_params()
    url = f"postgresql://postgres@{quote(params['host'], safe='')}/{params['dbname']}"
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "RAG_DATA_DIR": str(tmp_path / "data"),
        "RAG_CHAT_PROVIDER": "fake",
        "RAG_EMBEDDING_PROVIDER": "fake",
        "RAG_FAKE_CHAT_DELAY_MS": "150",
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "config.asgi:application",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        process.kill()
        pytest.fail(process.stdout.read().decode())
    yield base
    process.terminate()
    process.wait(timeout=20)


def signed_in(base: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=30)
    client.get("/accounts/login/")
    client.post(
        "/accounts/login/",
        data={
            "username": "alice",
            "password": "pw-alice-123",
            "csrfmiddlewaretoken": client.cookies["csrftoken"],
        },
        headers={"Referer": base + "/accounts/login/"},
    )
    return client


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
    intruder = httpx.Client(base_url=server, timeout=10)
    intruder.get("/accounts/login/")
    intruder.post(
        "/accounts/login/",
        data={
            "username": "mallory",
            "password": "pw-mallory-123",
            "csrfmiddlewaretoken": intruder.cookies["csrftoken"],
        },
        headers={"Referer": server + "/accounts/login/"},
    )
    assert intruder.get(f"/runs/{run_id}/events/").status_code == 404
    assert intruder.get(f"/runs/{run_id}/").status_code == 404
