"""Chat clients are built lazily: nothing needs a key until a run actually calls a model."""

import os
import subprocess
import sys

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured

from config.embedded_postgres import stop_server
from ragapp.providers.chat import chat_model_names, clear_chat_models_cache, get_chat_models


def test_import_build_and_check_need_no_key(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(
        RAG_CHAT_PROVIDER="openai", RAG_EMBEDDING_PROVIDER="openai", RAG_DATA_DIR=str(tmp_path)
    )
    code = (
        "import django; django.setup()\n"
        "from ragapp.graph.builder import build_graph; build_graph()\n"
        "from ragapp.providers.chat import chat_model_names; print(chat_model_names())\n"
        "from django.core.management import call_command; call_command('check')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=django_settings.BASE_DIR,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
    )
    stop_server(tmp_path)  # `check` asks PostgreSQL for its version: it started one
    assert result.returncode == 0, result.stderr
    assert "'generation': 'gpt-4o', 'grading': 'gpt-4o-mini'" in result.stdout


def test_the_openai_provider_without_a_key_fails_only_when_used(settings):
    settings.RAG_CHAT_PROVIDER = "openai"
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = None
    clear_chat_models_cache()
    assert chat_model_names()["generation"] == settings.RAG_GENERATION_MODEL
    with pytest.raises(ImproperlyConfigured, match="OPENAI_API_KEY"):
        get_chat_models()
    clear_chat_models_cache()


def test_one_client_per_distinct_model(settings):
    settings.RAG_CHAT_PROVIDER = "openai"
    settings.OPENAI_API_KEY = "sk-test"
    settings.RAG_GENERATION_MODEL = "gpt-4o"
    settings.RAG_GRADER_MODEL = settings.RAG_BROADEN_MODEL = "gpt-4o-mini"
    clear_chat_models_cache()
    models = get_chat_models()
    assert models.generator.model_name == "gpt-4o"
    assert models.grader is models.broadener and models.grader.model_name == "gpt-4o-mini"
    assert models.grader.temperature == 0
    assert models.relevance_method == settings.RAG_RELEVANCE_JUDGE
    assert models.faithfulness_method == settings.RAG_FAITHFULNESS_JUDGE
    clear_chat_models_cache()
