"""The multi-process deployment: 2 uvicorn processes, a Celery worker, Redis, PostgreSQL.

One topology (deploy/topology.py, the script the docs tell operators to run) serves every test
here, in order: a run started on process A streams whole from process B; a worker killed with
`kill -9` mid-run leaves a run that is failed within a bounded time with its events intact;
Redis restarted mid-stream loses no event and repeats none; PostgreSQL restarted between runs
needs no restart of the web processes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from deploy.topology import ROOT, Topology
from deploy.web import free_port

HEARTBEAT_S, STALE_S = 0.5, 3.0
METRICS_TOKEN = "topology-metrics-token-0123"


@pytest.fixture(scope="module")
def topology():
    if shutil.which("redis-server") is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed; .ci/run installs Debian's redis-server")
        pytest.skip("Debian's redis-server is not installed (apt-get install redis-server)")
    # Not pytest's tmp_path: a later pytest session prunes old ones under the running PostgreSQL.
    workdir = Path(tempfile.mkdtemp(prefix="rag-topology-"))
    docs = workdir / "docs"
    docs.mkdir()
    (docs / "ops.md").write_text(
        "# Operations\n\n## Restarting\n\nRestart the worker with `systemctl restart worker`.\n\n"
        "## Backups\n\nBackups run nightly at 02:00 and are kept for 30 days.\n"
    )
    topology = Topology(
        workdir / "run",
        web_ports=(free_port(), free_port()),
        redis_port=free_port(),
        docs=docs,
        env={
            "RAG_CHAT_PROVIDER": "fake",
            "RAG_EMBEDDING_PROVIDER": "fake",
            # Slow enough that a run is still going when a part is killed under it.
            "RAG_FAKE_CHAT_DELAY_MS": "250",
            "RAG_RUN_HEARTBEAT_SECONDS": str(HEARTBEAT_S),
            "RAG_RUN_STALE_SECONDS": str(STALE_S),
            "RAG_API_RUN_RATE": "off",
            "RAG_REUSE": "off",  # the same question asked again must run again
            "RAG_MAX_ACTIVE_RUNS_PER_USER": "100",  # one user starts every run here
            "RAG_METRICS_TOKEN": METRICS_TOKEN,
        },
    )
    with topology:
        topology.manage(
            "shell",
            "-c",
            "from django.contrib.auth.models import User; "
            "User.objects.create_user('alice', password='pw-alice-123')",
        )
        yield topology
    if not os.environ.get("TOPOLOGY_KEEP"):  # keep its logs and data to look into a failure
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def auth(topology):
    response = httpx.post(
        f"{topology.urls[0]}/api/token",
        json={"username": "alice", "password": "pw-alice-123"},
        timeout=10,
    )
    response.raise_for_status()
    return {"Authorization": f"Token {response.json()['token']}"}


def start_run(base: str, auth: dict, query: str = "How do I restart the worker?") -> str:
    response = httpx.post(f"{base}/api/rag", json={"query": query}, headers=auth, timeout=30)
    assert response.status_code == 202, response.text
    return response.json()["id"]


class Reader:
    """An SSE client that, like EventSource, reconnects with Last-Event-ID when dropped."""

    def __init__(self, base: str, run_id: str, auth: dict):
        self.base, self.run_id, self.auth = base, run_id, auth
        self.events: list[tuple[int, str]] = []
        self.reconnects = 0

    def read(self, *, until=None, deadline_s: float = 60) -> list[tuple[int, str]]:
        """Read events until `done` (or until `until(events)` holds); return all read so far."""
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            last = self.events[-1][0] if self.events else 0
            headers = {
                **self.auth,
                "Accept": "text/event-stream",
                "Last-Event-ID": f"run-{self.run_id}:{last}",
            }
            url = f"{self.base}/api/runs/{self.run_id}/events"
            try:
                with httpx.stream("GET", url, headers=headers, timeout=30) as response:
                    if response.status_code == 204:
                        return self.events
                    assert response.status_code == 200, response.read()
                    kind = None
                    for line in response.iter_lines():
                        if time.monotonic() > deadline:
                            break
                        if line.startswith("event:"):
                            kind = line[6:].strip()
                        elif line.startswith("id:") and kind:
                            self.events.append((int(line.rsplit(":", 1)[1]), kind))
                            if kind == "done" or (until and until(self.events)):
                                return self.events
            except httpx.TransportError:
                pass
            self.reconnects += 1
            time.sleep(0.2)
        raise AssertionError(f"no done within {deadline_s} s; read {self.events}")


def assert_whole(events: list[tuple[int, str]]) -> None:
    assert [seq for seq, _ in events] == list(range(1, len(events) + 1)), events
    assert events[-1][1] == "done"


def run_detail(base: str, auth: dict, run_id: str) -> dict:
    return httpx.get(f"{base}/api/runs/{run_id}", headers=auth, timeout=10).json()


def test_a_run_started_on_one_process_streams_whole_from_another(topology, auth):
    a, b = topology.urls
    run_id = start_run(a, auth)
    events = Reader(b, run_id, auth).read()
    assert_whole(events)
    kinds = [kind for _, kind in events]
    assert kinds[0] == "retrieve" and kinds[-2:] == ["answer", "done"]
    assert run_detail(a, auth, run_id)["status"] == "answered"
    assert "ragapp.execute_run" in topology.log("worker")  # executed by the worker, not A


def test_a_run_whose_worker_is_killed_is_failed_with_its_events_intact(topology, auth):
    a, b = topology.urls
    run_id = start_run(a, auth)
    reader = Reader(b, run_id, auth)
    reader.read(until=lambda events: len(events) >= 2)
    topology.kill("worker")  # kill -9: no cleanup, no last words
    killed_at = time.monotonic()
    events = reader.read(deadline_s=STALE_S + 30)
    detected_after = time.monotonic() - killed_at
    try:
        assert_whole(events)
        assert [kind for _, kind in events][-2:] == ["error", "done"]
        assert "answer" not in [kind for _, kind in events]
        run = run_detail(b, auth, run_id)
        assert run["status"] == "failed"
        assert "killed or crashed" in run["error"]
        # Bounded: the stale limit plus a couple of sweep periods (generous for a loaded box).
        assert detected_after < STALE_S + 20
        stored = httpx.get(f"{a}/api/runs/{run_id}/events", headers=auth, timeout=10).json()
        assert [(e["seq"], e["kind"]) for e in stored["events"]] == events
    finally:
        topology.start_worker()
    assert_whole(Reader(b, start_run(a, auth), auth).read())  # the new worker takes runs


def test_redis_restarted_mid_stream_loses_and_repeats_no_event(topology, auth):
    a, b = topology.urls
    run_id = start_run(a, auth)
    reader = Reader(b, run_id, auth)
    reader.read(until=lambda events: len(events) >= 1)
    topology.stop_redis()
    # The run goes on and ends without Redis: its events, `done` included, are stored, not
    # relayed, so the open stream can only get them by catching up once the relay is back.
    deadline = time.monotonic() + 60
    while run_detail(a, auth, run_id)["status"] not in ("answered", "refused", "failed"):
        assert time.monotonic() < deadline, "the run did not finish while Redis was down"
        time.sleep(0.2)
    time.sleep(0.5)  # `done` is stored just after the status turns final
    topology.start_redis()
    events = reader.read()
    assert_whole(events)
    assert run_detail(a, auth, run_id)["status"] == "answered"
    # The broker is back too: a new run is queued, executed and streamed.
    assert_whole(Reader(b, start_run(a, auth), auth).read())


def test_postgres_restarted_between_runs_needs_no_web_restart(topology, auth):
    a, b = topology.urls
    assert_whole(Reader(b, start_run(a, auth), auth).read())
    topology.restart_postgres()
    run_id = start_run(a, auth)
    assert_whole(Reader(b, run_id, auth).read())
    assert run_detail(b, auth, run_id)["status"] == "answered"


def scrape(base: str) -> dict[tuple[str, tuple], float]:
    """GET /metrics on one web process, by (sample name, sorted labels)."""
    response = httpx.get(
        f"{base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=10
    )
    assert response.status_code == 200, response.text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def test_runs_executed_by_the_worker_appear_in_either_web_process_metrics(topology, auth):
    """Multi-process mode: the worker's counts reach /metrics, and a killed worker's runs in
    progress (the kill test above) do not stay counted."""
    a, b = topology.urls
    before = scrape(a)
    assert_whole(Reader(b, start_run(a, auth), auth).read())
    after_a, after_b = scrape(a), scrape(b)

    answered = ("rag_runs_finished_total", (("status", "answered"),))
    assert after_a[answered] - before.get(answered, 0) == 1  # counted by the worker process
    node = ("rag_node_duration_seconds_count", (("node", "generate"),))
    assert after_a[node] - before.get(node, 0) == 1
    calls = (
        "rag_model_calls_total",
        (("model", "fake-chat"), ("outcome", "ok"), ("provider", "fake")),
    )
    assert after_a[calls] > before.get(calls, 0)
    assert after_a[answered] == after_b[answered]  # both web processes serve the host's sum
    assert after_a[("rag_runs_in_progress", ())] == 0
    assert after_a[("rag_ingest_documents_total", (("outcome", "new"),))] >= 1  # ingest_docs too

    # Every metric the Grafana dashboard queries is one these processes export.
    dashboard = json.loads((ROOT / "deploy" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    used = {name for expr in exprs for name in re.findall(r"\b(rag_[a-z_]+)", expr)}
    exported = {name for name, _ in after_a}
    assert len(used) >= 12
    assert used <= exported, used - exported
