"""Database backend: Django's PostgreSQL backend plus the embedded server."""

import contextlib
import threading
from pathlib import Path

import psycopg
from django.db.backends.postgresql import base

from config.embedded_postgres import ensure_server

_server_lock = threading.Lock()
_servers: dict[Path, object] = {}


def _server_for(data_dir: Path, *, refresh: bool = False):
    with _server_lock:
        if refresh or data_dir not in _servers:
            _servers[data_dir] = ensure_server(data_dir)
        return _servers[data_dir]


class DatabaseWrapper(base.DatabaseWrapper):
    """Connects to the embedded server of `OPTIONS["data_dir"]`, starting it if needed."""

    def _data_dir(self) -> Path:
        return Path(self.settings_dict["DATA_DIR"])

    def get_connection_params(self):
        params = super().get_connection_params()
        server = _server_for(self._data_dir())
        params.update(host=server.socket_dir, port=server.port, user=server.user)
        return params

    def get_new_connection(self, conn_params):
        try:
            return self._connect_creating_database(conn_params)
        except psycopg.OperationalError:
            # The server may have been stopped since we last looked: start it again, once.
            server = _server_for(self._data_dir(), refresh=True)
            conn_params.update(host=server.socket_dir, port=server.port)
            return self._connect_creating_database(conn_params)

    def _connect_creating_database(self, conn_params):
        try:
            return super().get_new_connection(conn_params)
        except psycopg.OperationalError as exc:
            if "does not exist" not in str(exc) or conn_params.get("dbname") == "postgres":
                raise
            _create_database(conn_params)
            return super().get_new_connection(conn_params)


def _create_database(conn_params) -> None:
    """Create the application database on a fresh embedded server (idempotent)."""
    admin_params = {**conn_params, "dbname": "postgres"}
    admin_params.pop("cursor_factory", None)
    admin_params.pop("context", None)
    with psycopg.connect(**admin_params, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [conn_params["dbname"]]
        ).fetchone()
        if not exists:
            # Another process may win the race to create it: that is fine.
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(f'CREATE DATABASE "{conn_params["dbname"]}"')
