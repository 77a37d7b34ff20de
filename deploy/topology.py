"""The multi-process deployment on one machine, without Docker: what docker-compose.yml runs.

    uv run python deploy/topology.py            # ports 8001 and 8002, Redis on 6390

It starts, in order: Redis (Debian's `redis-server`), the embedded PostgreSQL (through
`manage.py migrate`), a one-shot ingest of docs/ into an empty index, two uvicorn processes on
two ports, and one Celery worker, all configured by environment (RAG_EXECUTOR=celery,
RAG_REDIS_URL). Any web process accepts runs, the worker executes them, and any web process
streams any run. Ctrl-C stops everything. The tests drive the same class (`Topology`) to kill,
restart and load its parts.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


class TopologyError(RuntimeError):
    """A part of the topology did not come up."""


class Topology:
    """Redis, the embedded PostgreSQL, N uvicorn processes and one Celery worker, as children."""

    def __init__(
        self,
        workdir: Path,
        *,
        web_ports: tuple[int, ...] = (8001, 8002),
        redis_port: int = 6390,
        worker_concurrency: int = 4,
        env: dict[str, str] | None = None,
        docs: Path | None = ROOT / "docs",
        verbose: bool = False,
    ):
        self.workdir = Path(workdir).resolve()
        self.web_ports = tuple(web_ports)
        self.redis_port = redis_port
        self.worker_concurrency = worker_concurrency
        self.extra_env = dict(env or {})
        self.docs = docs
        self.processes: dict[str, subprocess.Popen] = {}
        self.logs = self.workdir / "logs"
        self.data_dir = self.workdir / "data"
        self.metrics_dir = self.workdir / "prometheus"
        self.verbose = verbose

    # --- the whole --------------------------------------------------------------------------

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.web_ports]

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    def env(self) -> dict[str, str]:
        key_file = self.workdir / "secret_key"
        if not key_file.exists():
            key_file.write_text(secrets.token_urlsafe(50))
        return {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": key_file.read_text(),
            "DJANGO_HTTPS": "false",
            "RAG_DATA_DIR": str(self.data_dir),
            "RAG_EXECUTOR": "celery",
            "RAG_REDIS_URL": self.redis_url,
            # Every process of this host writes its Prometheus values here; /metrics on either
            # web process serves their sum (docs/operations.md).
            "PROMETHEUS_MULTIPROC_DIR": str(self.metrics_dir),
            "PYTHONUNBUFFERED": "1",
            **self.extra_env,
        }

    def start(self) -> Topology:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        # Emptied before the processes start, as prometheus-client asks: values of an earlier
        # start's processes would otherwise be summed with this one's.
        shutil.rmtree(self.metrics_dir, ignore_errors=True)
        self.metrics_dir.mkdir()
        try:
            self.start_redis()
            self._say(f"Redis up on {self.redis_url}")
            self.manage("migrate", "-v", "0")
            self.manage("collectstatic", "--noinput", "-v", "0")
            self._say(f"PostgreSQL migrated (data in {self.data_dir})")
            if self.docs is not None:
                self._say(f"Ingesting {self.docs} (unchanged files are skipped) ...")
                self.manage("ingest_docs", str(self.docs))
            for port in self.web_ports:
                self.start_web(port)
                self._say(f"Web process up on http://127.0.0.1:{port}/")
            self.start_worker()
            self._say("Celery worker ready")
        except BaseException:
            with _sigint_ignored():  # a second Ctrl-C must not cut the cleanup short
                self.stop()
            raise
        return self

    def stop(self) -> None:
        for name in [n for n in self.processes if n != "redis"] + ["redis"]:
            self._terminate(name)
        from config.embedded_postgres import stop_server

        stop_server(self.data_dir)

    def __enter__(self) -> Topology:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run `manage.py ARGS` in the topology's environment."""
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        if check and result.returncode != 0:
            raise TopologyError(f"manage.py {' '.join(args)} failed:\n{result.stderr[-4000:]}")
        return result

    # --- the parts --------------------------------------------------------------------------

    def start_redis(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise TopologyError(
                "redis-server is not installed (Debian: apt-get install redis-server)"
            )
        self._spawn(
            "redis",
            [
                binary,
                *("--port", str(self.redis_port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(self.workdir)),
            ],
        )
        self._wait(lambda: self._redis_ping(), "redis", timeout=20)

    def stop_redis(self) -> None:
        self._terminate("redis")

    def start_web(self, port: int) -> None:
        name = f"web-{port}"
        self._spawn(
            name,
            [
                *(sys.executable, "-m", "uvicorn", "config.asgi:application"),
                *("--host", "127.0.0.1", "--port", str(port)),
                *("--log-level", "warning", "--lifespan", "off"),
            ],
        )
        url = f"http://127.0.0.1:{port}/healthz"
        self._wait(lambda: _http_ok(url), name, timeout=90)

    def start_worker(self) -> None:
        log = self.logs / "worker.log"
        start = log.stat().st_size if log.exists() else 0
        self._spawn(
            "worker",
            [
                *(sys.executable, "-m", "celery", "-A", "config", "worker"),
                *("--pool", "threads", "--concurrency", str(self.worker_concurrency)),
                *("--loglevel", "INFO", "--hostname", f"rag-worker-{self.redis_port}@%h"),
                # No broadcast chatter between workers: liveness comes from run heartbeats.
                *("--without-gossip", "--without-mingle", "--without-heartbeat"),
            ],
        )
        self._wait(lambda: " ready." in _read_from(log, start), "worker", timeout=90)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Send `sig` (default: kill -9) to a part, without any chance to clean up."""
        process = self.processes.pop(name)
        process.send_signal(sig)
        process.wait(timeout=30)

    def restart_postgres(self) -> None:
        """Stop the embedded PostgreSQL, then start it again on the same data directory."""
        from config.embedded_postgres import ensure_server, stop_server

        if not stop_server(self.data_dir):
            raise TopologyError("the embedded PostgreSQL was not running")
        ensure_server(self.data_dir)

    def _say(self, message: str) -> None:
        if self.verbose:
            print(message, flush=True)

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # --- plumbing ---------------------------------------------------------------------------

    def _spawn(self, name: str, command: list[str]) -> None:
        with open(self.logs / f"{name}.log", "ab") as log:
            self.processes[name] = subprocess.Popen(
                command,
                cwd=ROOT,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )

    def _terminate(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def _wait(self, ready, name: str, *, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            process = self.processes[name]
            if process.poll() is not None:
                raise TopologyError(
                    f"{name} exited ({process.returncode}):\n{self.log(name)[-4000:]}"
                )
            if ready():
                return
            time.sleep(0.2)
        raise TopologyError(f"{name} not ready after {timeout:.0f} s:\n{self.log(name)[-4000:]}")

    def _redis_ping(self) -> bool:
        import redis

        try:
            return redis.Redis(port=self.redis_port, socket_connect_timeout=1).ping()
        except redis.RedisError:
            return False


@contextmanager
def _sigint_ignored():
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may change signal handlers
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _die_with_parent() -> None:
    """In the child: get SIGTERM when this script dies, even by `kill -9` (Linux only)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _http_ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _read_from(path: Path, offset: int) -> str:
    if not path.exists():
        return ""
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.read().decode(errors="replace")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=ROOT / ".data" / "topology")
    parser.add_argument("--ports", default="8001,8002", help="web process ports, comma-separated")
    parser.add_argument("--redis-port", type=int, default=6390)
    parser.add_argument("--worker-concurrency", type=int, default=4)
    parser.add_argument("--docs", type=Path, default=ROOT / "docs", help="ingested at start")
    args = parser.parse_args()
    ports = tuple(int(port) for port in args.ports.split(","))
    topology = Topology(
        args.workdir,
        web_ports=ports,
        redis_port=args.redis_port,
        worker_concurrency=args.worker_concurrency,
        docs=args.docs,
        verbose=True,
    )
    print(f"Starting in {topology.workdir} (logs in {topology.logs}) ...", flush=True)
    try:
        topology.start()
    except KeyboardInterrupt:
        print("Interrupted; everything started so far is stopped.", file=sys.stderr)
        sys.exit(130)
    except TopologyError as exc:
        print(f"Could not start: {exc}", file=sys.stderr)
        sys.exit(1)
    print("Up:", *topology.urls, f"(Redis {topology.redis_url}); Ctrl-C stops it.", flush=True)
    print(
        f"Create an account: RAG_DATA_DIR={topology.data_dir} uv run manage.py createsuperuser",
        flush=True,
    )
    try:
        while all(p.poll() is None for p in topology.processes.values()):
            time.sleep(1)
        dead = [n for n, p in topology.processes.items() if p.poll() is not None]
        print(f"Stopping: {', '.join(dead)} exited (see {topology.logs}).", file=sys.stderr)
    except KeyboardInterrupt:
        print("Stopping ...", flush=True)
    finally:
        with _sigint_ignored():  # a second Ctrl-C must not cut the cleanup short
            topology.stop()


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
