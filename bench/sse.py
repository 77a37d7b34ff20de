"""Many concurrent SSE clients on one uvicorn process, each following its own run live.

For N clients (default 50, 200, 500) it submits N questions through the portal (fake models,
slowed a little so runs are watched while they happen), opens N event streams at once, and reads
each until its `done`. It reports events lost (stored minus received; target 0), delivery latency
from the TraceEvent row's timestamp to the client's receipt (p50/p95), and the server's memory per
open connection. The baseline, measured in the same run, is a single client: the ratio column is
p95 latency at N over p95 with one client.

    uv run python bench/sse.py                 # N = 50, 200, 500 (a few minutes)
    uv run python bench/sse.py --clients 20    # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import re
import statistics
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _django import throwaway_django


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def follow(client, run_id: str, received: list, connected: asyncio.Event | None):
    headers = {"Last-Event-ID": f"run-{run_id}:0", "Accept": "text/event-stream"}
    async with client.stream("GET", f"/runs/{run_id}/events/", headers=headers) as response:
        connected_at = time.time()
        if connected:
            connected.set()
        kind = data = None
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                data = line[5:].strip()
            elif line == "" and kind and data:
                if kind not in ("keep-alive", "stream-open"):
                    event = json.loads(data)
                    created = datetime.fromisoformat(event["created_at"]).timestamp()
                    # Latency counts only live deliveries: events written after this client
                    # connected (earlier ones come from storage on connect, by design).
                    live_ms = (time.time() - created) * 1000 if created >= connected_at else None
                    received.append((event["seq"], live_ms))
                    if kind == "done":
                        return
                kind = data = None


async def round_of(base: str, cookies: dict, token: str, clients: int, server_pid: int) -> dict:
    import httpx

    limits = httpx.Limits(max_connections=clients + 10, max_keepalive_connections=clients + 10)
    async with httpx.AsyncClient(base_url=base, cookies=cookies, timeout=300, limits=limits) as c:
        run_ids = []
        for i in range(clients):
            response = await c.post(
                "/",
                data={"query": f"How do I restart worker {i}?", "csrfmiddlewaretoken": token},
                headers={"Referer": base + "/"},
            )
            run_ids.append(response.headers["location"].strip("/").split("/")[-1])
        before = rss_kib(server_pid)
        received = {run_id: [] for run_id in run_ids}
        connected = [asyncio.Event() for _ in run_ids]
        tasks = [
            asyncio.create_task(follow(c, run_id, received[run_id], flag))
            for run_id, flag in zip(run_ids, connected, strict=True)
        ]
        await asyncio.wait_for(asyncio.gather(*(f.wait() for f in connected)), timeout=120)
        peak = rss_kib(server_pid)
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=600)
    return {"run_ids": run_ids, "received": received, "rss_before": before, "rss_peak": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[50, 200, 500])
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/all.py)")
    args = parser.parse_args()

    with throwaway_django(RAG_EMBEDDING_PROVIDER="fake", RAG_CHAT_PROVIDER="fake") as work:
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.db import connection
        from django.db.models import Count

        from deploy.web import database_url, signed_in, start_web
        from ragapp.models import TraceEvent

        docs = work / "docs"
        docs.mkdir()
        (docs / "ops.md").write_text("# Ops\n\n## Restart\n\nRestart workers with `restart`.\n")
        call_command("ingest_docs", str(docs), stdout=io.StringIO())
        get_user_model().objects.create_user("bench", password="pw-bench-123")
        env = {
            **os.environ,
            "DATABASE_URL": database_url(connection),
            "RAG_CHAT_PROVIDER": "fake",
            "RAG_EMBEDDING_PROVIDER": "fake",
            "RAG_FAKE_CHAT_DELAY_MS": "100",
            "RAG_REUSE": "off",  # it measures runs, not answers reused at once
            "RAG_MAX_CONCURRENT_RUNS": "6",
            # One user asks every question and holds every stream here.
            "RAG_MAX_STREAMS_PER_USER": "100000",
            "RAG_MAX_ACTIVE_RUNS_PER_USER": "100000",
            "RAG_MAX_QUEUED_RUNS": "100000",
            "RAG_DATA_DIR": str(work / "server"),
        }
        server, base = start_web(env, extra_args=("--limit-concurrency", "2000"))
        try:
            session = signed_in(base, "bench", "pw-bench-123")
            token = re.search(
                r'name="csrfmiddlewaretoken" value="([^"]+)"', session.get("/").text
            ).group(1)
            cookies = dict(session.cookies)
            rows = []
            for clients in [1, *args.clients]:
                result = asyncio.run(round_of(base, cookies, token, clients, server.pid))
                stored = dict(
                    TraceEvent.objects.filter(run_id__in=result["run_ids"])
                    .values("run_id")
                    .annotate(n=Count("id"))
                    .values_list("run_id", "n")
                )
                lost = sum(
                    stored.get(uuid.UUID(r), 0) - len({s for s, _ in events})
                    for r, events in result["received"].items()
                )
                dupes = sum(
                    len(events) - len({s for s, _ in events})
                    for events in result["received"].values()
                )
                latencies = [
                    ms
                    for events in result["received"].values()
                    for _, ms in events
                    if ms is not None
                ] or [0.0]
                per_conn = (result["rss_peak"] - result["rss_before"]) / clients
                rows.append(
                    (
                        clients,
                        lost,
                        dupes,
                        statistics.median(latencies),
                        percentile(latencies, 0.95),
                        per_conn,
                    )
                )
                print(
                    f"{clients:>4} clients: lost {lost}, duplicates {dupes}, latency p50 "
                    f"{rows[-1][3]:.1f} ms p95 {rows[-1][4]:.1f} ms, {per_conn:.0f} KiB/conn",
                    flush=True,
                )
        finally:
            server.terminate()
            server.wait(timeout=30)
    base_p95 = rows[0][4] or 1.0
    print("\nclients  lost  dupes  p50 ms   p95 ms   p95/1-client  KiB/conn")
    for clients, lost, dupes, p50, p95, per_conn in rows:
        print(
            f"{clients:>7} {lost:>5} {dupes:>6} {p50:>7.1f} {p95:>8.1f} {p95 / base_p95:>13.2f}"
            f" {per_conn:>9.0f}"
        )
    if args.json:
        keys = ("clients", "lost", "duplicates", "p50_ms", "p95_ms", "kib_per_conn")
        args.json.write_text(json.dumps([dict(zip(keys, row, strict=True)) for row in rows]))


if __name__ == "__main__":
    main()
