"""Load on the whole deployment: many runs a second, followed live by hundreds of event streams.

It submits runs at a fixed rate (open loop: a slow server does not slow the submitter) through
the JSON API with the fake models, and keeps about R Server-Sent Event streams open throughout:
every accepted run gets a reader at once (from it comes the time to first event), and more
readers join the runs in progress until R streams are open. Each reader follows one run from seq
0 to its `done`, resuming with Last-Event-ID if dropped, then closes (the API stream ends after
`done`), so readers come and go at about R divided by a run's streaming time.

The same load runs twice, each on its own throwaway PostgreSQL:

- single: one uvicorn process executing runs on its own threads (RAG_EXECUTOR=thread, no Redis);
- multi: deploy/topology.py, i.e. 2 uvicorn processes, 1 Celery worker, Redis, PostgreSQL. Runs
  are submitted round-robin to the web processes and every run is streamed from the *other* one,
  so every event reaches its readers through the Redis fan-out.

Figures: runs submitted, accepted, completed (a reader saw `done`) and failed; events lost (for
each stream that reached `done`: stored seqs from the JSON API minus seqs received; target 0);
duplicate events; time to first event (POST sent -> first trace event on any stream of the run)
and to `done`; HTTP errors by status; the achieved submit rate; and where the CPU went (client,
web, worker, Redis, PostgreSQL), since everything shares this machine's cores.

    uv run python bench/load.py                  # 20 runs/s for 60 s, 200 readers (~4 min)
    uv run python bench/load.py --quick          # 5 runs/s for 5 s, 50 readers (bench/all.py)
    uv run python bench/load.py --only multi --rate 10 --duration 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deploy.topology import Topology  # noqa: E402
from deploy.web import free_port  # noqa: E402

QUERY = "How do I restart the worker after a deploy?"
# Six small documents, so that retrieval returns five and the graph grades them, answers from the
# relevant ones and checks the answer: the full path of a run, with the fake models.
DOCS = {
    "ops.md": "# Operations\n\n## Restarting\n\nRestart the worker after a deploy with "
    "`systemctl restart worker`; the web processes reload on their own.\n",
    "backups.md": "# Backups\n\nBackups run nightly at 02:00 and are kept for 30 days.\n",
    "deploy.md": "# Deploying\n\nA deploy builds the image, migrates, then restarts the worker "
    "and the web processes one by one.\n",
    "alerts.md": "# Alerts\n\nThe on-call engineer is paged when the queue is longer than 500.\n",
    "access.md": "# Access\n\nAsk the platform team for production access; it expires weekly.\n",
    "logs.md": "# Logs\n\nLogs of the worker are kept for 14 days in the log store.\n",
}
STREAM_META = ("stream-open", "keep-alive", "stream-error")


# --- the two deployments ---------------------------------------------------------------------


class SingleProcess(Topology):
    """One uvicorn process with its own run threads and its own PostgreSQL; no Redis, no queue."""

    def start(self) -> SingleProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        try:
            self.manage("migrate", "-v", "0")
            self.manage("ingest_docs", str(self.docs))
            for port in self.web_ports:
                self.start_web(port)
        except BaseException:
            self.stop()
            raise
        return self


def deployment(kind: str, workdir: Path, args) -> Topology:
    docs = workdir / "docs"
    docs.mkdir(parents=True)
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    env = {
        "RAG_CHAT_PROVIDER": "fake",
        "RAG_EMBEDDING_PROVIDER": "fake",
        "RAG_FAKE_CHAT_DELAY_MS": str(args.delay_ms),
        "RAG_API_RUN_RATE": "off",
        "RAG_REUSE": "off",  # it measures runs, not answers reused at once
        # One benchmark user submits every run: the per-user and queue limits would refuse them.
        "RAG_MAX_ACTIVE_RUNS_PER_USER": "1000000",
        "RAG_MAX_QUEUED_RUNS": "1000000",
        "RAG_MAX_STREAMS_PER_USER": "1000000",
    }
    if kind == "single":
        env |= {
            "RAG_EXECUTOR": "thread",
            "RAG_REDIS_URL": "",  # empty counts as unset: one process, nothing shared
            "RAG_MAX_CONCURRENT_RUNS": str(args.run_concurrency),
        }
        return SingleProcess(workdir / "run", web_ports=(free_port(),), env=env, docs=docs)
    return Topology(
        workdir / "run",
        web_ports=(free_port(), free_port()),
        redis_port=free_port(),
        worker_concurrency=args.run_concurrency,
        env=env,
        docs=docs,
    )


# --- CPU accounting (Linux /proc) ------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()  # fields from 3 (state) on


def cpu_seconds(pid: int, *, with_children: bool = False) -> float:
    """CPU time of a process; with_children adds its live children and its reaped ones."""
    fields = _stat(pid)
    if fields is None:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    if with_children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime: reaped children
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                child = _stat(int(entry.name))
                if child is not None and child[1] == str(pid):  # ppid
                    ticks += int(child[11]) + int(child[12])
    return ticks / TICK


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle, iowait
    return sum(values) - idle, sum(values)


def component_pids(topology: Topology) -> dict[str, list[tuple[int, bool]]]:
    parts: dict[str, list[tuple[int, bool]]] = {}
    for name, process in topology.processes.items():
        part = "web" if name.startswith("web-") else name
        parts.setdefault(part, []).append((process.pid, False))
    pid_file = topology.data_dir / "pgdata" / "postmaster.pid"
    if pid_file.exists():
        parts["postgres"] = [(int(pid_file.read_text().split("\n", 1)[0]), True)]
    return parts


def cpu_snapshot(parts: dict[str, list[tuple[int, bool]]]) -> dict[str, float]:
    snap = {
        part: sum(cpu_seconds(pid, with_children=kids) for pid, kids in pids)
        for part, pids in parts.items()
    }
    usage = resource.getrusage(resource.RUSAGE_SELF)
    snap["client"] = usage.ru_utime + usage.ru_stime
    busy, total = machine_busy()
    snap["_busy"], snap["_total"] = busy, total
    snap["_wall"] = time.perf_counter()
    return snap


# --- the load --------------------------------------------------------------------------------


@dataclass
class Run:
    index: int
    submit_url: str
    stream_url: str
    posted_at: float
    accepted_at: float | None = None
    id: str | None = None
    first_event_at: float | None = None
    done_at: float | None = None
    followers: int = 0
    streams: list[Stream] = field(default_factory=list)


@dataclass
class Stream:
    primary: bool
    seqs: list[int] = field(default_factory=list)
    done: bool = False
    reconnects: int = 0


class Load:
    def __init__(self, urls: list[str], token: str, args):
        self.urls, self.args = urls, args
        self.auth = {"Authorization": f"Token {token}"}
        self.runs: list[Run] = []
        self.in_flight: list[Run] = []  # accepted, no `done` seen yet
        self.errors: Counter[str] = Counter()
        self.open_streams = 0
        self.streams_opened = 0
        self.open_samples: list[int] = []
        self.loop_lag_ms: list[float] = []
        self.tasks: set[asyncio.Task] = set()
        self.submitting = True

    def spawn(self, coro) -> None:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def submit(self, client, run: Run) -> None:
        try:
            response = await client.post(
                f"{run.submit_url}/api/rag",
                json={"query": f"{QUERY} ({run.index})"},
                headers=self.auth,
            )
        except Exception as exc:  # httpx errors and timeouts alike
            self.errors[f"POST /api/rag: {type(exc).__name__}"] += 1
            return
        if response.status_code != 202:
            self.errors[f"POST /api/rag: HTTP {response.status_code}"] += 1
            return
        run.accepted_at = time.perf_counter()
        run.id = response.json()["id"]
        self.in_flight.append(run)
        self.reader(client, run, primary=True)

    def reader(self, client, run: Run, *, primary: bool) -> None:
        """Start a reader on `run`, counted as open from now on."""
        stream = Stream(primary=primary)
        run.streams.append(stream)
        run.followers += 1
        self.open_streams += 1
        self.spawn(self.follow(client, run, stream))

    async def follow(self, client, run: Run, stream: Stream) -> None:
        """Read one run's stream from seq 0 to `done`, reconnecting like EventSource."""
        try:
            while not stream.done and stream.reconnects <= 20:
                last = stream.seqs[-1] if stream.seqs else 0
                headers = {
                    **self.auth,
                    "Accept": "text/event-stream",
                    "Last-Event-ID": f"run-{run.id}:{last}",
                }
                self.streams_opened += 1
                try:
                    url = f"{run.stream_url}/api/runs/{run.id}/events"
                    async with client.stream("GET", url, headers=headers) as response:
                        if response.status_code == 204:
                            self.errors["GET events stream: HTTP 204 before done"] += 1
                            return
                        if response.status_code != 200:
                            self.errors[f"GET events stream: HTTP {response.status_code}"] += 1
                        else:
                            await self._read(response, run, stream)
                except Exception as exc:
                    self.errors[f"GET events stream: {type(exc).__name__}"] += 1
                if not stream.done:
                    stream.reconnects += 1
                    await asyncio.sleep(0.2)
        finally:
            run.followers -= 1
            self.open_streams -= 1

    async def _read(self, response, run: Run, stream: Stream) -> None:
        kind = seq = None
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("id:"):
                tail = line[3:].strip().rsplit(":", 1)[-1]
                seq = int(tail) if tail.isdigit() else None
            elif not line:
                if kind and seq is not None and kind not in STREAM_META:
                    now = time.perf_counter()
                    stream.seqs.append(seq)
                    if run.first_event_at is None:
                        run.first_event_at = now
                    if kind == "done":
                        stream.done = True
                        if run.done_at is None:
                            run.done_at = now
                            if run in self.in_flight:
                                self.in_flight.remove(run)
                        return
                kind = seq = None

    async def top_up(self, client) -> None:
        """Keep about R streams open: extra readers join the runs in progress with fewest."""
        period, report_at = 0.02, time.perf_counter() + 5
        while self.submitting:
            started = time.perf_counter()
            await asyncio.sleep(period)
            if started >= report_at:
                report_at += 5
                print(f"  {self.progress()}", flush=True)
            self.loop_lag_ms.append((time.perf_counter() - started - period) * 1000)
            self.open_samples.append(self.open_streams)
            while self.open_streams < self.args.readers and self.in_flight:
                run = min(reversed(self.in_flight), key=lambda r: r.followers)
                self.reader(client, run, primary=False)

    def progress(self) -> str:
        accepted = sum(1 for run in self.runs if run.id)
        done = sum(1 for run in self.runs if run.done_at)
        return (
            f"submitted {len(self.runs)}, accepted {accepted}, done {done}, "
            f"streams open {self.open_streams}, errors {sum(self.errors.values())}"
        )

    async def drive(self) -> dict:
        import httpx

        limits = httpx.Limits(max_connections=None, max_keepalive_connections=100)
        timeout = httpx.Timeout(60.0, connect=15.0)
        async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
            topper = asyncio.create_task(self.top_up(client))
            total = round(self.args.rate * self.args.duration)
            started = time.perf_counter()
            for index in range(total):
                delay = started + index / self.args.rate - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                submit_url = self.urls[index % len(self.urls)]
                stream_url = self.urls[(index + 1) % len(self.urls)]
                run = Run(index, submit_url, stream_url, posted_at=time.perf_counter())
                self.runs.append(run)
                self.spawn(self.submit(client, run))
            await asyncio.sleep(max(0.0, started + self.args.duration - time.perf_counter()))
            submit_window = time.perf_counter() - started
            done_in_window = sum(1 for run in self.runs if run.done_at)
            self.submitting = False
            await topper
            # Drain: the streams already open may finish; nothing new joins.
            print(f"  end of submitting: {self.progress()}; draining", flush=True)
            deadline = time.perf_counter() + self.args.drain
            while self.tasks and time.perf_counter() < deadline:
                await asyncio.sleep(0.1)
            print(f"  drained: {self.progress()}", flush=True)
            cut = len(self.tasks)
            for task in list(self.tasks):
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            stored = await self.stored(client)
        return {
            "submit_window_s": submit_window,
            "done_in_window": done_in_window,
            "streams_cut_at_drain": cut,
            "stored": stored,
        }

    async def stored(self, client) -> dict[str, dict]:
        """Each accepted run's stored trace and status, from the JSON API."""
        gate = asyncio.Semaphore(16)
        out: dict[str, dict] = {}

        async def one(run: Run) -> None:
            async with gate:
                for _ in range(5):
                    try:
                        response = await client.get(
                            f"{self.urls[0]}/api/runs/{run.id}/events", headers=self.auth
                        )
                        response.raise_for_status()
                        out[run.id] = response.json()
                        return
                    except Exception:
                        await asyncio.sleep(1)
                # Without the stored trace nothing can be checked: never count that as no loss.
                self.errors["GET events JSON (after the load): failed 5 times"] += 1

        await asyncio.gather(*(one(run) for run in self.runs if run.id))
        return out


def percentile(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else None


def figures(load: Load, result: dict, before: dict, after: dict) -> dict:
    accepted = [run for run in load.runs if run.id]
    stored = result["stored"]
    lost = duplicates = complete_streams = 0
    for run in accepted:
        seqs = {event["seq"] for event in stored.get(run.id, {}).get("events", [])}
        for stream in run.streams:
            duplicates += len(stream.seqs) - len(set(stream.seqs))
            if stream.done:
                complete_streams += 1
                lost += len(seqs - set(stream.seqs))
    statuses = Counter(stored.get(run.id, {}).get("status", "unknown") for run in accepted)
    unfinished = sum(1 for run in accepted if not stored.get(run.id, {}).get("finished", False))
    first_ms = [
        (run.first_event_at - run.posted_at) * 1000 for run in accepted if run.first_event_at
    ]
    done_ms = [(run.done_at - run.posted_at) * 1000 for run in accepted if run.done_at]
    post_ms = [(run.accepted_at - run.posted_at) * 1000 for run in accepted]
    wall = after["_wall"] - before["_wall"]
    cpu = {
        part: (after[part] - before.get(part, 0.0)) / wall * 100
        for part in after
        if not part.startswith("_")
    }
    busy = (after["_busy"] - before["_busy"]) / max(after["_total"] - before["_total"], 1) * 100
    server = sum(pct for part, pct in cpu.items() if part != "client")
    # What the machine did besides this benchmark (other users of the shared cores).
    cpu["other processes"] = max(0.0, busy * (os.cpu_count() or 1) - server - cpu["client"])
    cpu["machine busy, % of all cores"] = busy
    server_ms_per_run = server * 10 * result["submit_window_s"] / max(result["done_in_window"], 1)
    steady = load.open_samples[50:] or load.open_samples or [0]  # after the first second
    return {
        "runs submitted": len(load.runs),
        "runs accepted (202)": len(accepted),
        "achieved submit rate, runs/s": len(accepted) / result["submit_window_s"],
        "runs completed (done seen)": sum(1 for run in accepted if run.done_at),
        "runs completed per s while submitting": result["done_in_window"]
        / result["submit_window_s"],
        "runs failed": statuses.get("failed", 0),
        "runs unfinished at the end": unfinished,
        "statuses": dict(statuses),
        "events lost": lost,
        "duplicate events": duplicates,
        "streams that reached done": complete_streams,
        "stream connections opened": load.streams_opened,
        "stream connections opened per s": load.streams_opened / result["submit_window_s"],
        "streams open, mean": sum(steady) / len(steady),
        "streams open, min": min(steady),
        "streams open, max": max(steady),
        "streams cut at the drain": result["streams_cut_at_drain"],
        "reconnects": sum(s.reconnects for run in accepted for s in run.streams),
        "POST /api/rag p50 ms": percentile(post_ms, 0.5),
        "POST /api/rag p95 ms": percentile(post_ms, 0.95),
        "time to first event p50 ms": percentile(first_ms, 0.5),
        "time to first event p95 ms": percentile(first_ms, 0.95),
        "time to done p50 ms": percentile(done_ms, 0.5),
        "time to done p95 ms": percentile(done_ms, 0.95),
        "http errors": dict(load.errors),
        "client loop lag p95 ms": percentile(load.loop_lag_ms, 0.95),
        "server CPU ms per run completed while submitting": server_ms_per_run,
        "cpu % of one core": cpu,
    }


def warm_up(urls: list[str], token: str) -> None:
    """A few runs through every process first: the first run of a process imports and connects."""
    import httpx

    auth = {"Authorization": f"Token {token}"}
    for index in range(3 * len(urls)):
        response = httpx.post(
            f"{urls[index % len(urls)]}/api/rag", json={"query": QUERY}, headers=auth, timeout=60
        )
        response.raise_for_status()
        run_id = response.json()["id"]
        headers = {**auth, "Accept": "text/event-stream", "Last-Event-ID": f"run-{run_id}:0"}
        url = f"{urls[(index + 1) % len(urls)]}/api/runs/{run_id}/events"
        with httpx.stream("GET", url, headers=headers, timeout=60) as stream:
            for line in stream.iter_lines():
                if line == "event: done":
                    break


def measure(kind: str, args) -> dict:
    import httpx

    workdir = Path(tempfile.mkdtemp(prefix=f"rag-load-{kind}-"))
    topology = deployment(kind, workdir, args)
    print(f"[{kind}] starting in {workdir} ...", flush=True)
    started = time.perf_counter()
    try:
        with topology:
            topology.manage(
                "shell",
                "-c",
                "from django.contrib.auth.models import User; "
                "User.objects.create_user('loadbench', password='pw-loadbench-123')",
            )
            response = httpx.post(
                f"{topology.urls[0]}/api/token",
                json={"username": "loadbench", "password": "pw-loadbench-123"},
                timeout=30,
            )
            response.raise_for_status()
            token = response.json()["token"]
            warm_up(topology.urls, token)
            print(f"[{kind}] up in {time.perf_counter() - started:.0f} s; loading", flush=True)
            load = Load(topology.urls, token, args)
            parts = component_pids(topology)
            before = cpu_snapshot(parts)
            result = asyncio.run(_with_window(load, parts, before), loop_factory=loop_factory())
            result["figures"]["processes"] = {p: len(pids) for p, pids in parts.items()}
            return result["figures"]
    finally:
        if args.keep:
            print(f"[{kind}] kept {workdir}", flush=True)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def loop_factory():
    """uvloop (installed with uvicorn[standard]) when there is one: a lighter client."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def _with_window(load: Load, parts, before) -> dict:
    """Run the load; CPU is measured over the submit window only (not the drain)."""
    window: dict = {}

    async def snapshot_at_end() -> None:
        await asyncio.sleep(load.args.duration)
        window["after"] = cpu_snapshot(parts)

    snap = asyncio.create_task(snapshot_at_end())
    result = await load.drive()
    await snap
    return {"figures": figures(load, result, before, window["after"])}


# --- the report ------------------------------------------------------------------------------


def flatten(figs: dict) -> dict[str, float | int | None]:
    flat: dict[str, float | int | None] = {}
    for key, value in figs.items():
        if key in ("statuses", "processes"):
            continue
        if key == "http errors":
            for error, count in value.items():
                flat[f"errors: {error}"] = count
        elif key == "cpu % of one core":
            for part, pct in value.items():
                label = part if part.startswith("machine") else f"cpu {part}, % of one core"
                flat[label] = pct
        else:
            flat[key] = value
    return flat


def fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{value:,}"


def table(results: dict[str, dict]) -> str:
    single = flatten(results.get("single", {}))
    multi = flatten(results.get("multi", {}))
    keys = list(dict.fromkeys([*single, *multi]))
    errors = [k for k in keys if k.startswith("errors: ")]
    keys = [k for k in keys if not k.startswith("errors: ")] + errors
    if not errors:
        keys.append("errors: none")
    width = max(len(k) for k in keys)
    lines = [f"{'metric':<{width}}  {'single':>10}  {'multi':>10}  {'multi/single':>12}"]
    for key in keys:
        s, m = single.get(key), multi.get(key)
        if key.startswith("errors: "):
            s, m = s or 0, m or 0
        ratio = "-"
        if isinstance(s, int | float) and isinstance(m, int | float) and s:
            ratio = f"{m / s:.2f}"
        lines.append(f"{key:<{width}}  {fmt(s):>10}  {fmt(m):>10}  {ratio:>12}")
    for kind in ("single", "multi"):
        if kind in results:
            statuses = ", ".join(f"{k} {v}" for k, v in sorted(results[kind]["statuses"].items()))
            lines.append(f"{kind} run statuses: {statuses}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=20.0, help="runs submitted per second")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of submitting")
    parser.add_argument("--readers", type=int, default=200, help="SSE streams kept open")
    parser.add_argument("--delay-ms", type=int, default=30, help="fake model reply delay")
    parser.add_argument(
        "--run-concurrency",
        type=int,
        default=8,
        help="runs executing at once: the single process's threads, the Celery worker's",
    )
    parser.add_argument("--drain", type=float, default=60.0, help="seconds to let runs finish")
    parser.add_argument("--quick", action="store_true", help="5 runs/s for 5 s, 50 readers")
    parser.add_argument("--only", choices=("single", "multi"), help="measure one column")
    parser.add_argument("--keep", action="store_true", help="keep the work dirs (logs, data)")
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/all.py)")
    args = parser.parse_args()
    if args.quick:
        args.rate, args.duration, args.readers = 5.0, 5.0, 50
    if args.rate <= 0 or args.duration <= 0 or args.readers < 1:
        parser.error("--rate and --duration must be positive and --readers at least 1")
    print(
        f"Load: {args.rate:g} runs/s for {args.duration:g} s "
        f"({math.ceil(args.rate * args.duration)} runs), {args.readers} readers, fake models "
        f"with {args.delay_ms} ms per reply, {args.run_concurrency} runs at once; "
        f"{os.cpu_count()} CPUs",
        flush=True,
    )
    results = {}
    for kind in ("single", "multi"):
        if args.only in (None, kind):
            results[kind] = measure(kind, args)
    print()
    print(table(results))
    if args.json:
        settings = {
            k: getattr(args, k)
            for k in ("rate", "duration", "readers", "delay_ms", "run_concurrency", "drain")
        }
        args.json.write_text(json.dumps({"settings": settings, **results}, indent=2))


if __name__ == "__main__":
    main()
