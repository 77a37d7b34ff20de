"""LangSmith is never on by accident: langchain's switches count only with RAG_LANGSMITH_TRACING."""

import os
import subprocess
import sys

import pytest
from django.conf import settings as django_settings

from ragapp.observability.langsmith import TRACING_VARIABLES, guard_langsmith

PROBE = (
    "import django, os; django.setup();"
    "from langsmith.utils import tracing_is_enabled;"
    "from langchain_core.tracers.context import _tracing_v2_is_enabled;"
    "print(tracing_is_enabled(), _tracing_v2_is_enabled(), os.environ.get('LANGSMITH_TRACING'))"
)


def _probe(**env) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in TRACING_VARIABLES}
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=django_settings.BASE_DIR,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.parametrize("variable", ["LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"])
def test_a_stray_tracing_variable_is_switched_off_at_start_up(variable):
    assert _probe(**{variable: "true", "LANGSMITH_API_KEY": "lsv2_pt_x"}) == "False False None"


def test_langsmith_traces_when_the_operator_says_so():
    enabled = _probe(
        LANGSMITH_TRACING="true", LANGSMITH_API_KEY="lsv2_pt_x", RAG_LANGSMITH_TRACING="true"
    )
    assert enabled == "True True true"


def test_the_guard_removes_every_name_langsmith_reads():
    environ = {name: "true" for name in TRACING_VARIABLES} | {"PATH": "/bin"}
    assert guard_langsmith(allowed=False, environ=environ) == list(TRACING_VARIABLES)
    assert environ == {"PATH": "/bin"}
    kept = {"LANGSMITH_TRACING": "true"}
    assert guard_langsmith(allowed=True, environ=kept) == [] and kept == {
        "LANGSMITH_TRACING": "true"
    }
