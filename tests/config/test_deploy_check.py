"""Production settings: Django's deployment checklist passes with DJANGO_DEBUG=false."""

import os
import secrets
import subprocess
import sys
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection

pytestmark = pytest.mark.django_db


def test_check_deploy_is_clean_in_production_settings(tmp_path):
    params = connection.get_connection_params()
    host = quote(params["host"], safe="")
    env = {
        **os.environ,
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "docs.example.com",
        "DATABASE_URL": f"postgresql://postgres@{host}/{params['dbname']}",
        "RAG_DATA_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    # A named host is what makes it production: served under localhost names only, a key is
    # generated into RAG_DATA_DIR instead (tests/config/test_safe_defaults.py).
    env = {
        **os.environ,
        "DJANGO_DEBUG": "false",
        "DJANGO_ALLOWED_HOSTS": "docs.example.com",
        "RAG_DATA_DIR": str(tmp_path),
    }
    env.pop("DJANGO_SECRET_KEY", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set when DJANGO_ALLOWED_HOSTS names a host" in result.stderr
    assert not (tmp_path / "secret_key").exists()
