"""The Prometheus metrics, declared once, and how /metrics collects them.

Each process counts in prometheus-client's objects below. With `PROMETHEUS_MULTIPROC_DIR` set
(the multi-process shape: several uvicorn workers and Celery workers on one host), the library
keeps every process's values in files in that directory, and /metrics on any web process reads
them all: one scrape is the sum over the host. Without it, /metrics shows this process alone,
which is the whole story for `manage.py serve`.
"""

from __future__ import annotations

import glob
import os

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, multiprocess

# Seconds. A run takes milliseconds with a remote model's cache, ~20 s on a local CPU model, and
# at most RAG_RUN_MAX_SECONDS (300 by default).
RUN_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300)
NODE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
MODEL_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120)

RUNS_STARTED = Counter("rag_runs_started", "Runs whose execution started.")
RUNS_FINISHED = Counter("rag_runs_finished", "Runs that ended, by final status.", ["status"])
RUNS_REUSED = Counter("rag_runs_reused", "Runs answered at once from an earlier run (RAG_REUSE).")
RUN_SECONDS = Histogram(
    "rag_run_duration_seconds",
    "Time from a run's start to its final status, by that status.",
    ["status"],
    buckets=RUN_BUCKETS,
)
NODE_SECONDS = Histogram(
    "rag_node_duration_seconds",
    "Time spent in each graph node, per execution of the node.",
    ["node"],
    buckets=NODE_BUCKETS,
)
MODEL_CALLS = Counter(
    "rag_model_calls",
    "Chat model calls, by provider, model and outcome (ok, timeout, 429, error).",
    ["provider", "model", "outcome"],
)
MODEL_SECONDS = Histogram(
    "rag_model_call_duration_seconds",
    "Chat model call latency (the client's retries included), by provider, model and outcome.",
    ["provider", "model", "outcome"],
    buckets=MODEL_BUCKETS,
)
MODEL_TOKENS = Counter(
    "rag_model_tokens",
    "Tokens the chat model server reported, by provider, model and type (input, output).",
    ["provider", "model", "type"],
)
COST_USD = Counter(
    "rag_estimated_cost_usd",
    "Estimated cost of the runs' chat model calls in US dollars (ragapp/pricing.py).",
    ["provider"],
)
# Gauges of live processes only: the values of a process that exited are dropped at the next
# scrape (`drop_dead_processes`), so a killed worker's in-flight runs do not count forever.
RUNS_IN_PROGRESS = Gauge(
    "rag_runs_in_progress",
    "Runs executing now.",
    multiprocess_mode="livesum",
)
STREAMS_OPEN = Gauge(
    "rag_event_streams_open",
    "Open Server-Sent Event streams of run traces.",
    multiprocess_mode="livesum",
)
INGEST_DOCUMENTS = Counter(
    "rag_ingest_documents",
    "Files met by ingestion, by outcome (new, updated, unchanged, skipped, failed, pruned).",
    ["outcome"],
)
INGEST_CHUNKS = Counter(
    "rag_ingest_chunks",
    "Chunks written by ingestion, by the outcome of their document (new, updated).",
    ["outcome"],
)
# Collected at scrape time from the database (views.py): the queued runs are the queue.
QUEUE_DEPTH_NAME = "rag_executor_queue_depth"
RUNNING_NAME = "rag_runs_running"


def multiprocess_dir() -> str | None:
    """The directory every process of this host writes its values to, or None."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def registry_to_expose(*extra) -> CollectorRegistry:
    """What /metrics serves: every process of the host, or this one; plus the `extra` collectors."""
    directory = multiprocess_dir()
    if directory is None:
        registry = CollectorRegistry()
        registry.register(_Everything(REGISTRY))
    else:
        drop_dead_processes(directory)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=directory)
    for collector in extra:
        registry.register(collector)
    return registry


class _Everything:
    """This process's default registry, as one collector (to add the scrape-time ones to it)."""

    def __init__(self, registry):
        self._registry = registry

    def collect(self):
        return self._registry.collect()

    def describe(self):
        return []


def drop_dead_processes(directory: str) -> None:
    """Forget the live-only gauges of processes that have exited (a worker killed mid-run)."""
    for path in glob.glob(os.path.join(directory, "gauge_live*_*.db")):
        pid = os.path.basename(path).rsplit("_", 1)[1].removesuffix(".db")
        if pid.isdigit() and not _alive(int(pid)):
            multiprocess.mark_process_dead(int(pid), path=directory)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def record_reuse() -> None:
    """A run answered from an earlier one: started and answered at once, no model called."""
    RUNS_STARTED.inc()
    RUNS_FINISHED.labels("answered").inc()
    RUNS_REUSED.inc()


def record_ingest(outcome: str, chunks: int) -> None:
    """Count one file's ingest outcome and the chunks it wrote."""
    INGEST_DOCUMENTS.labels(outcome).inc()
    if chunks:
        INGEST_CHUNKS.labels(outcome).inc(chunks)
