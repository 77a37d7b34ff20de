"""Start Django for a benchmark on a throwaway embedded PostgreSQL (never the user's .data/)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the benchmarks import ragapp, some of it before Django is set up


@contextmanager
def throwaway_django(**env: str):
    """Set up Django with a fresh data dir and migrated database; stop and delete it afterwards."""
    work = Path(tempfile.mkdtemp(prefix="rag-bench-"))
    os.environ["RAG_DATA_DIR"] = str(work / "data")
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    from config.embedded_postgres import stop_server

    try:
        call_command("migrate", verbosity=0)
        yield work
    finally:
        from django.db import connections

        connections.close_all()
        stop_server(work / "data")
        shutil.rmtree(work, ignore_errors=True)
