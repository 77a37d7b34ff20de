"""The README's run command: `manage.py serve` on a fresh data dir, for real, in a subprocess."""

import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from config.embedded_postgres import stop_server
from deploy.web import free_port
from ragapp.management.commands.serve import is_loopback


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
    # The README's command sets nothing: no debug switch, no secret key, no host names.
    for name in ("DJANGO_DEBUG", "DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS", "DATABASE_URL"):
        env.pop(name, None)
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
        assert (status, body) == (200, '{"status": "ok"}')  # no detail for anonymous callers
        status, body = get(f"http://127.0.0.1:{port}/admin/login/")
        assert status == 200 and "Django administration" in body
        status, css = get(f"http://127.0.0.1:{port}/static/admin/css/base.css")
        assert status == 200 and "body" in css
        # Debug is off: a missing page is Django's plain 404, not the debug page with settings.
        with pytest.raises(urllib.error.HTTPError) as missing:
            get(f"http://127.0.0.1:{port}/no-such-page/")
        assert missing.value.code == 404
        assert "URLconf" not in missing.value.read().decode()
    finally:
        server.terminate()
        output = server.communicate(timeout=30)[0]
    assert "The knowledge base is empty: ingesting" in output
    assert "Debug mode is off" in output
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


def test_serve_refuses_debug_mode_on_an_address_others_can_reach(fresh_data_dir):
    # fresh_data_dir stops the embedded server afterwards, should serve have started one.
    env = {**os.environ, "DJANGO_DEBUG": "true", "RAG_DATA_DIR": str(fresh_data_dir)}
    result = subprocess.run(
        [sys.executable, "manage.py", "serve", "--host", "0.0.0.0", "--port", str(free_port())],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "DJANGO_DEBUG is true: serve only binds 127.0.0.1, ::1 or localhost" in result.stderr
    assert not (fresh_data_dir / "pgdata").exists()  # refused before it started anything


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.10", False),
        ("docs.example.com", False),
    ],
)
def test_only_addresses_this_machine_alone_reaches_count_as_loopback(host, loopback):
    assert is_loopback(host) is loopback
