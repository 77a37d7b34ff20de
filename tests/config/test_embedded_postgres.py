"""The embedded PostgreSQL: started once, shared by processes that start at the same moment."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest
from django.conf import settings

from config.embedded_postgres import ensure_server, stop_server

START_AND_REPORT = """
import json, sys
from pathlib import Path
from config.embedded_postgres import ensure_server
import psycopg
server = ensure_server(Path(sys.argv[1]))
with psycopg.connect(host=server.socket_dir, port=server.port, user=server.user,
                     dbname="postgres") as conn:
    pid = conn.execute("SELECT pg_postmaster_start_time()::text").fetchone()[0]
print(json.dumps({"socket": server.socket_dir, "started": pid}))
"""


@pytest.fixture
def data_dir():
    path = Path(tempfile.mkdtemp(prefix="rag-pg-race-"))
    yield path
    stop_server(path)


def test_two_processes_starting_at_once_share_one_server(data_dir):
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", START_AND_REPORT, str(data_dir)],
            cwd=settings.BASE_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    reports = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    assert reports[0] == reports[1]  # same socket, same postmaster start time: one server

    # A later process (a restart) reuses the running server instead of starting another.
    again = ensure_server(data_dir)
    assert again.socket_dir == reports[0]["socket"]
    with psycopg.connect(
        host=again.socket_dir, port=again.port, user=again.user, dbname="postgres"
    ) as conn:
        started = conn.execute("SELECT pg_postmaster_start_time()::text").fetchone()[0]
        vector = conn.execute(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
    assert started == reports[0]["started"]
    assert vector is not None and vector[0].startswith("0.8")


def test_a_stopped_server_is_started_again_on_next_use(data_dir):
    first = ensure_server(data_dir)
    assert stop_server(data_dir) is True
    assert stop_server(data_dir) is False
    second = ensure_server(data_dir)
    with psycopg.connect(
        host=second.socket_dir, port=second.port, user=second.user, dbname="postgres"
    ) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert first.socket_dir == second.socket_dir
