"""A real uvicorn server over the test database, for streaming and browser tests."""

import json
import os
import subprocess
import time
from io import StringIO

import httpx
import pytest
from django.core.management import call_command
from django.db import connection

from deploy import web
from deploy.web import database_url, free_port, start_web  # noqa: F401  (free_port: for other tests)
from tests.ragapp.factories import user_with_password


def shared_database_url() -> str:
    """The test database as a DATABASE_URL, for another process to share it."""
    return database_url(connection)


@pytest.fixture
def server(request, tmp_path, django_user_model):
    """uvicorn serving the app on the test database, with the fake models.

    Parametrize it indirectly with a dict to set more environment variables.
    """
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ops.md").write_text(
        "# Ops\n\n## Restart\n\nRestart the worker with `systemctl restart worker`.\n"
    )
    call_command("ingest_docs", str(tmp_path / "docs"), stdout=StringIO())
    user_with_password(django_user_model, "alice", "pw-alice-123")
    env = {
        **os.environ,
        "DATABASE_URL": shared_database_url(),
        "RAG_DATA_DIR": str(tmp_path / "data"),
        "RAG_CHAT_PROVIDER": "fake",
        "RAG_EMBEDDING_PROVIDER": "fake",
        "RAG_FAKE_CHAT_DELAY_MS": "150",
        "RAG_REUSE": "off",  # the same question asked again must run again
        "RAG_MAX_ACTIVE_RUNS_PER_USER": "50",  # tests/ragapp/runs/test_submit.py tests the limit
        **getattr(request, "param", {}),
    }
    try:
        process, base = start_web(env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield base
    process.terminate()
    process.wait(timeout=20)


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
