"""The settings a process gets from its environment: safe when nothing is set, working locally.

Each case imports config.settings in a fresh process with a clean environment, as a deployment
or `manage.py serve` would, since the values are decided once, at import.
"""

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

SHOW = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({n: getattr(s, n) for n in "
    "('DEBUG', 'SECURE_SSL_REDIRECT', 'SESSION_COOKIE_SECURE', 'SECURE_HSTS_SECONDS')}))"
)


def settings_in_a_fresh_process(tmp_path, **environment) -> subprocess.CompletedProcess:
    # Only what a process needs to start Python: nothing of this test run's configuration.
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "RAG_DATA_DIR": str(tmp_path / "data"),
        **environment,
    }
    return subprocess.run(
        [sys.executable, "-c", SHOW],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def loaded(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_nothing_set_means_no_debug_and_a_local_site_that_works(tmp_path):
    values = loaded(settings_in_a_fresh_process(tmp_path))

    assert values["DEBUG"] is False
    # Served under localhost names only: plain HTTP works, and the key is generated and kept.
    assert values["SECURE_SSL_REDIRECT"] is False and values["SESSION_COOKIE_SECURE"] is False
    key_file = tmp_path / "data" / "secret_key"
    assert key_file.exists() and oct(key_file.stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("value, debug", [("true", True), ("1", True), ("false", False)])
def test_debug_is_on_only_when_asked_for(tmp_path, value, debug):
    assert loaded(settings_in_a_fresh_process(tmp_path, DJANGO_DEBUG=value))["DEBUG"] is debug


def test_a_named_host_makes_it_a_deployment_with_https_by_default(tmp_path):
    values = loaded(
        settings_in_a_fresh_process(
            tmp_path, DJANGO_ALLOWED_HOSTS="docs.example.com", DJANGO_SECRET_KEY="k" * 50
        )
    )
    assert values["DEBUG"] is False
    assert values["SECURE_SSL_REDIRECT"] is True and values["SESSION_COOKIE_SECURE"] is True
    assert values["SECURE_HSTS_SECONDS"] > 0
