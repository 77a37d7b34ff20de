"""Structured logs: one JSON object per line with the run's context, and never a secret."""

import io
import json
import logging
import os
import subprocess
import sys

import pytest
from django.conf import settings as django_settings

from ragapp.graph.context import ChatModels
from ragapp.observability.logs import JsonFormatter, TextFormatter
from ragapp.providers.fake_chat import FakeChatModel, FakeScript
from ragapp.retrieval.retrievers import build_retriever
from ragapp.runs.runner import execute_run
from ragapp.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)

API_KEY = "sk-proj-Zx81live0key0never0shown"
LANGSMITH_KEY = "lsv2_pt_0123456789abcdef0123456789"
METRICS_TOKEN = "metrics-token-never-shown-42"
DB_PASSWORD = "pg-Pass-w0rd-9917"
REDIS_PASSWORD = "redis-pass-5521"
SECRETS = (API_KEY, LANGSMITH_KEY, METRICS_TOKEN, DB_PASSWORD, REDIS_PASSWORD)

log = logging.getLogger("tests.observability")


@pytest.fixture
def json_log(settings, monkeypatch):
    """Root log lines as the JSON formatter writes them, with secrets this process knows."""
    settings.OPENAI_API_KEY = API_KEY
    settings.RAG_METRICS_TOKEN = METRICS_TOKEN
    monkeypatch.setenv("LANGSMITH_API_KEY", LANGSMITH_KEY)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    yield stream
    root.removeHandler(handler)


class LoggingRetriever:
    """The real retriever, saying something careless about its credentials first."""

    def __init__(self, inner):
        self.inner, self.mode = inner, inner.mode

    def search(self, query, *, k, depth=None, companions=0):
        log.warning(
            "searching with postgres://rag:%s@db:5432/rag, redis://:%s@cache:6379/0, key %s",
            DB_PASSWORD,
            REDIS_PASSWORD,
            API_KEY,
        )
        return self.inner.search(query, k=k, depth=depth)


def careless_generate(question, docs):
    log.info("generating; headers={'Authorization': 'Bearer %s'}", METRICS_TOKEN)
    try:
        raise ConnectionError(f"api key {API_KEY} and {LANGSMITH_KEY} rejected")
    except ConnectionError:
        log.exception("the model server said no")
    return f"According to the documentation, {docs[0].splitlines()[-1]} [1]"


def test_lines_logged_during_a_run_carry_its_context_and_no_secret(
    json_log, knowledge_base, fake_chat, fake_embeddings, users
):
    model = FakeChatModel(script=FakeScript(generate=careless_generate))
    models = ChatModels(generator=model, grader=model, broadener=model, names={"all": "fake"})
    owner = users["owner"]
    run = run_create(query="How do I start the beta service?", owner=owner)
    retriever = LoggingRetriever(build_retriever(mode="vector", embeddings=fake_embeddings))
    execute_run(run, models=models, retriever=retriever)
    log.info("after the run")

    text = json_log.getvalue()
    lines = [json.loads(line) for line in text.splitlines()]  # every line is one JSON object
    assert run.status == "answered"
    for secret in SECRETS:
        assert secret not in text
    by_message = {line["message"].split(" ", 1)[0]: line for line in lines}
    searching, generating, said_no = (
        by_message["searching"],
        by_message["generating;"],
        by_message["the"],
    )
    for line, node in ((searching, "retrieve"), (generating, "generate"), (said_no, "generate")):
        assert (line["run_id"], line["user_id"], line["node"]) == (str(run.pk), owner.pk, node)
        assert line["level"] in ("INFO", "WARNING", "ERROR")
    assert "ConnectionError" in said_no["exception"] and "[redacted]" in said_no["exception"]
    assert "[redacted]" in searching["message"]
    after = by_message["after"]
    assert "run_id" not in after and "node" not in after  # the context ends with the run


def test_the_text_format_is_readable_and_scrubbed_too():
    formatter = TextFormatter("%(levelname)s %(name)s: %(message)s", secrets=(API_KEY,))
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "key %s", (API_KEY,), None)
    assert formatter.format(record) == "WARNING x: key [redacted]"


def _log_from_a_fresh_process(**env) -> subprocess.CompletedProcess:
    script = (
        "import logging, django; django.setup();"
        "from django.conf import settings;"
        "log = logging.getLogger('probe');"
        "log.warning('settings: %s %s', settings.OPENAI_API_KEY, settings.DATABASES['default']);"
        "log.warning('secret key %s', settings.SECRET_KEY)"
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=django_settings.BASE_DIR,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "OPENAI_API_KEY": API_KEY,
            "DJANGO_SECRET_KEY": "django-secret-key-never-shown-0123456789",
            "DATABASE_URL": f"postgres://rag:{DB_PASSWORD}@db.invalid:5432/rag",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_rag_log_format_json_makes_every_line_json_in_a_real_process():
    result = _log_from_a_fresh_process(RAG_LOG_FORMAT="json")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert [line["logger"] for line in lines] == ["probe", "probe"]
    for secret in (API_KEY, DB_PASSWORD, "django-secret-key-never-shown-0123456789"):
        assert secret not in result.stderr


def test_text_stays_the_default_in_a_real_process():
    result = _log_from_a_fresh_process()
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0].split(" ")[2:4] == ["WARNING", "probe:"]
    for secret in (API_KEY, DB_PASSWORD, "django-secret-key-never-shown-0123456789"):
        assert secret not in result.stderr
