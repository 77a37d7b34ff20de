"""The README's run command: `manage.py serve` on a fresh data dir, for real, in a subprocess."""

import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from config.embedded_postgres import stop_server
from deploy.web import free_port


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode()


@pytest.fixture
def fresh_data_dir():
    path = Path(tempfile.mkdtemp(prefix="rag-serve-"))
    yield path
    stop_server(path)


def test_serve_migrates_ingests_docs_and_serves_admin(fresh_data_dir):
    port = free_port()
    env = {**os.environ, "RAG_DATA_DIR": str(fresh_data_dir), "RAG_EMBEDDING_PROVIDER": "fake"}
    manage = [sys.executable, "manage.py"]
    server = subprocess.Popen(
        [*manage, "serve", "--port", str(port)],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                status, body = get(f"http://127.0.0.1:{port}/healthz")
                break
            except OSError:
                assert server.poll() is None, server.stdout.read()
                assert time.monotonic() < deadline, "serve did not come up in 120 s"
                time.sleep(0.5)
        assert (status, '"database": "ok"' in body) == (200, True)
        status, body = get(f"http://127.0.0.1:{port}/admin/login/")
        assert status == 200 and "Django administration" in body
        status, css = get(f"http://127.0.0.1:{port}/static/admin/css/base.css")
        assert status == 200 and "body" in css
    finally:
        server.terminate()
        output = server.communicate(timeout=30)[0]
    assert "The knowledge base is empty: ingesting" in output
    docs_count = len(list((Path(settings.BASE_DIR) / "docs").glob("*.md")))
    assert f"{docs_count} new, 0 updated" in output

    # The docs are in the database for good: a dry run now finds every file unchanged.
    dry_run = subprocess.run(
        [*manage, "ingest_docs", "--dry-run", "docs"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"0 new, 0 updated, {docs_count} unchanged" in dry_run.stdout
