"""Runs never stay "running" forever: heartbeats from the process executing them, and a sweeper.

Every process that executes runs (a web process with the thread executor, a Celery worker,
`manage.py ask`, `eval_rag`) marks the runs it is executing as alive every
RAG_RUN_HEARTBEAT_SECONDS: `executing` starts the beat on first use. Web processes and workers
also sweep (`start_monitor`): a running run whose heartbeat is older than RAG_RUN_STALE_SECONDS
lost its process (`kill -9`, an OOM kill, a lost machine) and is failed with a reason, its trace
closed with `error` and `done`. A run is thus failed within RAG_RUN_STALE_SECONDS plus one
heartbeat period of its process dying, by whichever process looks first.
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager

from django.conf import settings
from django.db import close_old_connections, connections

from ragapp.services import runs_fail_lost, runs_heartbeat
from ragapp.trace.stream import publish

logger = logging.getLogger(__name__)


class RunMonitor:
    """A daemon thread: heartbeats for this process's runs, and the sweep for lost ones."""

    def __init__(self, period: float, *, sweeps: bool = True):
        self.period = period
        self.sweeps = sweeps
        self._active: set = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def track(self, run_id) -> None:
        with self._lock:
            self._active.add(run_id)

    def untrack(self, run_id) -> None:
        with self._lock:
            self._active.discard(run_id)

    def start(self, *, sweep: bool = False) -> None:
        self.sweeps = self.sweeps or sweep
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="rag-liveness", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.period + 5)

    def tick(self) -> None:
        """One heartbeat, and one sweep where this process sweeps."""
        with self._lock:
            active = set(self._active)
        if not active and not self.sweeps:
            return
        close_old_connections()
        try:
            runs_heartbeat(run_ids=active)
            if self.sweeps:
                for run in runs_fail_lost(publish=publish):
                    logger.warning("run %s failed: %s", run.pk, run.error)
        finally:
            connections.close_all()

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.tick()
            except Exception:  # the database may be restarting: try again next period
                logger.warning("liveness check failed; retrying", exc_info=True)


_monitor: RunMonitor | None = None
_monitor_lock = threading.Lock()


def get_monitor() -> RunMonitor:
    """This process's monitor (not started until `start_monitor`)."""
    global _monitor
    with _monitor_lock:
        if _monitor is None:
            # It sweeps once a web process or worker starts it (`start_monitor`); a command that
            # only executes runs (`ask`, `eval_rag`) just beats for them.
            _monitor = RunMonitor(settings.RAG_RUN_HEARTBEAT_SECONDS, sweeps=False)
        return _monitor


def reset_monitor() -> None:
    """Stop and forget this process's monitor; the next use builds one from the settings (tests)."""
    global _monitor
    with _monitor_lock:
        monitor, _monitor = _monitor, None
    if monitor is not None:
        monitor.stop()


def start_monitor() -> RunMonitor:
    """Start this process's heartbeats and sweeps (web processes and workers call this)."""
    monitor = get_monitor()
    monitor.start(sweep=True)
    return monitor


@contextmanager
def executing(run_id):
    """Heartbeat for `run_id` while the block runs, starting this process's beat if need be."""
    monitor = get_monitor()
    monitor.track(run_id)
    monitor.start()
    try:
        yield
    finally:
        monitor.untrack(run_id)
