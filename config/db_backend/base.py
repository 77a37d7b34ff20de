"""Database backend: Django's PostgreSQL backend plus the embedded server."""

import contextlib
import threading
from pathlib import Path

import psycopg
from django.db.backends.postgresql import base

from config.embedded_postgres import ensure_server

_lock = threading.Lock()
_servers: dict[Path, object] = {}
_created: set[tuple[Path, str]] = set()


def _server_for(data_dir: Path, *, refresh: bool = False):
    with _lock:
        if refresh or data_dir not in _servers:
            _servers[data_dir] = ensure_server(data_dir)
        return _servers[data_dir]


class DatabaseWrapper(base.DatabaseWrapper):
    """Connects to the embedded server of `DATA_DIR`, starting it (and its database) if needed."""

    def _data_dir(self) -> Path:
        return Path(self.settings_dict["DATA_DIR"])

    def get_connection_params(self):
        params = super().get_connection_params()
        server = _server_for(self._data_dir())
        params.update(host=server.socket_dir, port=server.port, user=server.user)
        # Only the app's own database is created here; test databases are Django's to create.
        if params.get("dbname") == self.settings_dict.get("AUTO_CREATE"):
            _ensure_database(self._data_dir(), params)
        return params

    def get_new_connection(self, conn_params):
        try:
            return super().get_new_connection(conn_params)
        except psycopg.OperationalError:
            if self.pool:
                raise  # the pool retries by itself
            # The server may have been stopped since we last looked: start it again, once.
            server = _server_for(self._data_dir(), refresh=True)
            conn_params.update(host=server.socket_dir, port=server.port)
            return super().get_new_connection(conn_params)


def _ensure_database(data_dir: Path, params: dict) -> None:
    """Create the application database on a fresh embedded server (once per process)."""
    key = (data_dir, params["dbname"])
    with _lock:
        if key in _created:
            return
        connect = {k: params[k] for k in ("host", "port", "user")}
        with psycopg.connect(**connect, dbname="postgres", autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [params["dbname"]]
            ).fetchone()
            if not exists:
                # Another process may win the race to create it: that is fine.
                with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                    conn.execute(f'CREATE DATABASE "{params["dbname"]}"')
        _created.add(key)
