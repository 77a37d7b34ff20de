"""OpenTelemetry: one trace per run, a span per node and per model call, linked to its request."""

import json

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

import ragapp.runs.executor as executor_module
from config.celery import app as celery_app
from ragapp.models import QueryRun
from ragapp.observability import tracing
from ragapp.tasks import execute_run_task
from tests.ragapp.api.conftest import token_client

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def spans():
    """Tracing on, into memory; the exporter holds every finished span."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_provider(provider)
    yield exporter
    tracing.use_provider(None)


def ask(users) -> str:
    response = token_client(users["owner"]).post(
        "/api/rag", {"query": "How do I start the beta service?"}, format="json"
    )
    assert response.status_code == 202, response.content
    return response.json()["id"]


def assert_run_trace(finished, run_id: str) -> None:
    """The span tree of one run, and its link to the request that submitted it."""
    (request,) = [s for s in finished if s.kind == SpanKind.SERVER]
    assert request.name == "POST /api/rag"
    assert request.attributes["http.response.status_code"] == 202
    (run,) = [s for s in finished if s.attributes.get("rag.run.id") == run_id]
    assert run.name == "invoke_agent docs-assistant"
    assert run.parent is None  # a trace of its own ...
    assert run.context.trace_id != request.context.trace_id
    (link,) = run.links  # ... linked to the request
    assert (link.context.trace_id, link.context.span_id) == (
        request.context.trace_id,
        request.context.span_id,
    )
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["rag.run.status"] == "answered"
    in_run = [s for s in finished if s.context.trace_id == run.context.trace_id]
    nodes = {s.context.span_id: s for s in in_run if s.name.startswith("node ")}
    assert all(s.parent.span_id == run.context.span_id for s in nodes.values())
    assert {s.attributes["rag.node"] for s in nodes.values()} >= {
        "retrieve",
        "grade_docs",
        "generate",
        "grade_answer",
    }
    calls = [s for s in in_run if s.name.startswith("chat ")]
    assert calls and all(s.parent.span_id in nodes for s in calls)
    under = {nodes[s.parent.span_id].attributes["rag.node"] for s in calls}
    # grade_docs judges on a thread pool: its calls still nest under its span.
    assert {"grade_docs", "generate", "grade_answer"} <= under
    for call in calls:
        assert call.kind == SpanKind.CLIENT
        assert call.attributes["gen_ai.operation.name"] == "chat"
        assert call.attributes["gen_ai.request.model"] == "fake-chat"
        assert call.attributes["gen_ai.provider.name"] == "fake"
        assert call.attributes["gen_ai.usage.input_tokens"] > 0
    assert run.attributes["gen_ai.usage.input_tokens"] == sum(
        c.attributes["gen_ai.usage.input_tokens"] for c in calls
    )


@pytest.fixture
def pooled_judge(settings, fake_chat):
    """The structured relevance judge, which judges documents on a thread pool."""
    settings.RAG_RELEVANCE_JUDGE = "structured"
    settings.RAG_RELEVANCE_THRESHOLD = 0.5


def test_a_run_on_the_thread_executor_is_one_trace_linked_to_its_request(
    spans, users, knowledge_base, pooled_judge, thread_executor
):
    run_id = ask(users)
    thread_executor.wait()
    assert QueryRun.objects.get(pk=run_id).status == "answered"
    assert_run_trace(spans.get_finished_spans(), run_id)


def test_a_run_on_a_celery_worker_is_linked_through_the_task_message(
    spans, users, knowledge_base, pooled_judge, settings, monkeypatch
):
    settings.RAG_EXECUTOR = "celery"
    executor_module._executor = None
    sent = []
    monkeypatch.setattr(
        celery_app,
        "send_task",
        lambda name, args, kwargs, **_: sent.append((args, kwargs)),
    )
    try:
        run_id = ask(users)
    finally:
        executor_module._executor = None
    (args, kwargs) = sent[0]
    assert json.loads(json.dumps(kwargs))["trace_context"]["traceparent"]  # in the message body
    execute_run_task(*args, **kwargs)  # what the worker does with the message

    assert QueryRun.objects.get(pk=run_id).status == "answered"
    assert_run_trace(spans.get_finished_spans(), run_id)


def test_tracing_is_off_without_an_endpoint(settings):
    assert settings.OTEL_TRACING is False  # the tests' environment names no OTLP endpoint
    assert tracing.tracer() is None
    assert tracing.capture() == {}
