"""A real uvicorn server over the test database, for streaming and browser tests."""

import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from io import StringIO
from pathlib import Path

import httpx
import pytest
from django.core.management import call_command
from django.db import connection

from deploy import web
from deploy.web import database_url, start_web
from ragapp.models import QueryRun
from tests.ragapp.factories import user_with_password


def shared_database_url() -> str:
    """The test database as a DATABASE_URL, for another process to share it."""
    return database_url(connection)


class Served(str):
    """A live server's base URL, which also knows the data dir its process writes to."""

    data_dir: Path


class WebProcesses:
    """uvicorn processes over the test database, one per environment, kept for a module's tests.

    Starting one costs about 7 s on two cores (its imports, then the first request), more than
    most of the tests that use it. A test's process is reused by the next test that asks for
    the same environment, but only once no run is executing, so a test's runs are over before
    the database is emptied. A run still waiting in the process's queue then would find its row
    gone and not execute (runner.execute_queued_run), or fail on its first write if it started
    just before. Each test still ingests its page, gets its own user and signs in (the database
    is emptied between tests).
    """

    RUNS_SETTLE_S = 15  # a run left going (150 ms a model call) ends well within this

    def __init__(self, data_root: Path):
        self.data_root = data_root
        self.running: dict[tuple, tuple[subprocess.Popen, Served]] = {}
        self.started = 0

    def serving(self, extra: dict[str, str]) -> Served:
        key = tuple(sorted(extra.items()))
        if key in self.running and self.running[key][0].poll() is None:
            return self.running[key][1]
        self.started += 1
        data_dir = self.data_root / f"web-{self.started}"
        env = {
            **os.environ,
            "DATABASE_URL": shared_database_url(),
            "RAG_DATA_DIR": str(data_dir),
            "RAG_CHAT_PROVIDER": "fake",
            "RAG_EMBEDDING_PROVIDER": "fake",
            "RAG_FAKE_CHAT_DELAY_MS": "150",
            "RAG_REUSE": "off",  # the same question asked again must run again
            # tests/ragapp/runs/test_submit.py tests the limit
            "RAG_MAX_ACTIVE_RUNS_PER_USER": "50",
            **extra,
        }
        data_dir.mkdir(parents=True)
        # A file, not a pipe: the process lives for the whole file of tests, and a pipe nobody
        # reads fills up with its log until every thread that logs blocks.
        log = data_dir / "web.log"
        try:
            with log.open("wb") as output:
                process, base = start_web(env, stdout=output, stderr=subprocess.STDOUT)
        except RuntimeError as exc:
            pytest.fail(f"{exc}\n{log.read_text(errors='replace')}")
        served = Served(base)
        served.data_dir = data_dir
        self.running[key] = (process, served)
        return served

    def settle(self, extra: dict[str, str]) -> None:
        """After a test: keep its process once no run is executing; stop it if one still is."""
        key = tuple(sorted(extra.items()))
        if key in self.running and not _runs_end_within(self.RUNS_SETTLE_S):
            _stop(self.running.pop(key)[0])

    def stop_all(self) -> None:
        for process, _ in self.running.values():
            _stop(process)
        self.running.clear()


def _runs_end_within(seconds: float) -> bool:
    """Whether every executing run has ended within `seconds`, read on a connection of its own.

    A thread of its own: a browser test's Playwright loop may still be on this one, where
    Django refuses database calls.
    """

    def wait():
        deadline = time.monotonic() + seconds
        try:
            while QueryRun.objects.filter(status=QueryRun.Status.RUNNING).exists():
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.2)
            return True
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(wait).result()


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def web_processes(django_db_setup, tmp_path_factory):
    """The module's live web processes (`WebProcesses`), stopped when the module ends."""
    processes = WebProcesses(tmp_path_factory.mktemp("web"))
    yield processes
    processes.stop_all()


@pytest.fixture
def server(request, tmp_path, django_user_model, web_processes):
    """uvicorn serving the app on the test database, with the fake models: its base URL.

    Parametrize it indirectly with a dict to set more environment variables; tests asking for
    the same ones share a process (`WebProcesses`).
    """
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ops.md").write_text(
        "# Ops\n\n## Restart\n\nRestart the worker with `systemctl restart worker`.\n"
    )
    call_command("ingest_docs", str(tmp_path / "docs"), stdout=StringIO())
    user_with_password(django_user_model, "alice", "pw-alice-123")
    extra = getattr(request, "param", {})
    yield web_processes.serving(extra)
    web_processes.settle(extra)


def signed_in(base: str, username: str = "alice", password: str = "pw-alice-123") -> httpx.Client:
    """An HTTP client signed in through the real login form."""
    return web.signed_in(base, username, password)


def read_closed_stream(response: httpx.Response, timeout_s: float = 60) -> tuple[list[dict], str]:
    """A stream the server closes: its events (`event` plus the JSON data), and its raw text.

    Keep-alives and stream-open are left out. Fails when the server does not close the stream
    within `timeout_s` (keep-alives would otherwise hold it open forever).
    """
    events, kind, data, raw = [], None, None, []
    deadline = time.monotonic() + timeout_s
    for line in response.iter_lines():
        assert time.monotonic() < deadline, f"the stream did not close; got {events}"
        raw.append(line)
        if line.startswith("event:"):
            kind = line.split(":", 1)[1].strip()
        elif line.startswith("data:"):
            data = line.split(":", 1)[1].strip()
        elif line == "":
            if kind not in (None, "keep-alive", "stream-open"):
                events.append({"event": kind, **json.loads(data)})
            kind, data = None, None
    return events, "\n".join(raw)
