"""Start one uvicorn web process over a given database and wait until it serves.

The streaming and browser tests and the SSE benchmark all need the real ASGI server in its own
process, on the database they prepared; this is the one place that starts it.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url(connection) -> str:
    """A DATABASE_URL for another process to share the database `connection` is on."""
    params = connection.get_connection_params()
    return f"postgresql://postgres@{quote(params['host'], safe='')}/{params['dbname']}"


def start_web(
    env: dict[str, str], *, extra_args: tuple[str, ...] = (), timeout_s: float = 60, **popen
) -> tuple[subprocess.Popen, str]:
    """uvicorn serving the app with `env`, once /healthz answers; returns it and its base URL.

    Raises RuntimeError, with what the process printed if it captured that, when the server
    exits or does not answer within `timeout_s`.
    """
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "config.asgi:application", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--log-level", "warning", *extra_args], cwd=ROOT, env=env, **popen
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return process, base
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    output = process.communicate()[0] if popen.get("stdout") == subprocess.PIPE else b""
    raise RuntimeError(f"the web process did not start: {(output or b'').decode(errors='replace')}")


def signed_in(base: str, username: str, password: str) -> httpx.Client:
    """An HTTP client signed in through the real login form."""
    client = httpx.Client(base_url=base, timeout=30)
    client.get("/accounts/login/")
    client.post(
        "/accounts/login/",
        data={
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": client.cookies["csrftoken"],
        },
        headers={"Referer": base + "/accounts/login/"},
    )
    return client
