"""GET /metrics: refused until a scraper is named, then the counts of real runs and ingests."""

import io

import httpx
import openai
import pytest
from django.core.management import call_command
from langchain_core.language_models import BaseChatModel

from ragapp.graph.context import ChatModels
from ragapp.observability.instrument import outcome_of
from ragapp.runs.runner import execute_run
from ragapp.runs.submit import run_submit
from ragapp.services import run_create, run_start
from ragapp.trace.stream import open_streams
from tests.ragapp.observability.conftest import TOKEN, delta, scrape

pytestmark = pytest.mark.django_db(transaction=True)


def test_metrics_are_off_until_a_scraper_is_named(client):
    assert client.get("/metrics").status_code == 404


def test_a_token_is_required_once_one_is_set(client, metrics_token):
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong-token-wrong").status_code == 401
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert b"rag_runs_started_total" in response.content


def test_an_allowed_network_needs_no_token(client, settings):
    import ipaddress

    settings.RAG_METRICS_ALLOWED_NETWORKS = (ipaddress.ip_network("10.0.0.0/8"),)
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.168.1.1").status_code == 403
    # The header a client writes itself never counts as its address.
    refused = client.get("/metrics", REMOTE_ADDR="192.168.1.1", HTTP_X_FORWARDED_FOR="10.1.2.3")
    assert refused.status_code == 403


def test_runs_are_counted_with_their_nodes_model_calls_and_tokens(
    client, metrics_token, knowledge_base, fake_chat
):
    before = scrape(client)
    answered = execute_run(run_create(query="How do I start the beta service?"))
    refused = execute_run(run_create(query="Which colour is the office carpet?"))
    queued = run_create(query="Still waiting for a worker")
    after = scrape(client)

    assert (answered.status, refused.status) == ("answered", "refused")
    assert delta(before, after, "rag_runs_started_total") == 2
    assert delta(before, after, "rag_runs_finished_total", status="answered") == 1
    assert delta(before, after, "rag_runs_finished_total", status="refused") == 1
    assert delta(before, after, "rag_run_duration_seconds_count", status="answered") == 1
    assert after[("rag_runs_in_progress", ())] == 0
    assert after[("rag_executor_queue_depth", ())] == 1  # `queued`, read from the database
    assert after[("rag_runs_running", ())] == 0
    assert queued.status == "queued"
    run_start(run=queued)  # as a worker in another container would: only the database knows
    assert scrape(client)[("rag_runs_running", ())] == 1
    # Both runs retrieved and graded; only the answered one generated and was checked.
    assert delta(before, after, "rag_node_duration_seconds_count", node="retrieve") >= 2
    assert delta(before, after, "rag_node_duration_seconds_count", node="generate") == 2
    assert delta(before, after, "rag_node_duration_seconds_count", node="grade_answer") == 1
    calls = sum(
        sum(t["calls"] for t in run.response_metadata["tokens"].values())
        for run in (answered, refused)
    )
    labels = {"provider": "fake", "model": "fake-chat", "outcome": "ok"}
    assert calls > 0
    assert delta(before, after, "rag_model_calls_total", **labels) == calls
    assert delta(before, after, "rag_model_call_duration_seconds_count", **labels) == calls
    tokens = sum(
        t["output"] for run in (answered, refused) for t in run.response_metadata["tokens"].values()
    )
    assert (
        delta(
            before,
            after,
            "rag_model_tokens_total",
            provider="fake",
            model="fake-chat",
            type="output",
        )
        == tokens
    )


class FailingModel(BaseChatModel):
    """A chat model whose every call fails with `error`."""

    error: Exception
    model_name: str = "flaky-model"

    @property
    def _llm_type(self) -> str:
        return "failing"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        raise self.error


def _status_error(status: int) -> openai.APIStatusError:
    request = httpx.Request("POST", "http://models.invalid/v1/chat/completions")
    response = httpx.Response(status, request=request, json={"error": {"message": "no"}})
    kind = openai.RateLimitError if status == 429 else openai.InternalServerError
    return kind("no", response=response, body=None)


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (openai.APITimeoutError(request=httpx.Request("POST", "http://m.invalid/")), "timeout"),
        (_status_error(429), "429"),
        (_status_error(500), "error"),
    ],
)
def test_failed_model_calls_are_counted_by_outcome(
    client, metrics_token, knowledge_base, settings, error, outcome
):
    settings.RAG_CHAT_PROVIDER = "fake"
    settings.RAG_HYDE = False  # no passage for the search: the one call counted is the judge's
    model = FailingModel(error=error)
    # The yes/no judge: its first call goes straight to the model, which fails.
    models = ChatModels(generator=model, grader=model, broadener=model, relevance_method="logprobs")
    before = scrape(client)
    run = execute_run(run_create(query="How do I start the beta service?"), models=models)
    after = scrape(client)

    assert run.status == "failed"
    assert outcome_of(error) == outcome
    labels = {"provider": "fake", "model": "flaky-model", "outcome": outcome}
    assert delta(before, after, "rag_model_calls_total", **labels) == 1
    assert delta(before, after, "rag_model_call_duration_seconds_count", **labels) == 1
    assert delta(before, after, "rag_runs_finished_total", status="failed") == 1


def test_ingest_counts_documents_and_chunks_by_outcome(client, metrics_token, tmp_path):
    (tmp_path / "a.md").write_text("# A\n\nAlpha restarts with `alpha restart`.\n")
    (tmp_path / "b.md").write_text("# B\n\nBeta logs rotate daily.\n")
    before = scrape(client)
    call_command("ingest_docs", str(tmp_path), stdout=io.StringIO())
    (tmp_path / "b.md").write_text("# B\n\nBeta logs rotate weekly now.\n")
    call_command("ingest_docs", str(tmp_path), stdout=io.StringIO())
    call_command("ingest_docs", str(tmp_path), "--dry-run", stdout=io.StringIO())
    after = scrape(client)

    assert delta(before, after, "rag_ingest_documents_total", outcome="new") == 2
    assert delta(before, after, "rag_ingest_documents_total", outcome="unchanged") == 1
    assert delta(before, after, "rag_ingest_documents_total", outcome="updated") == 1
    assert delta(before, after, "rag_ingest_chunks_total", outcome="new") >= 2
    assert delta(before, after, "rag_ingest_chunks_total", outcome="updated") >= 1


def test_open_event_streams_are_a_gauge(client, metrics_token):
    before = scrape(client)[("rag_event_streams_open", ())]
    assert open_streams.take(4242, limit=5)
    assert scrape(client)[("rag_event_streams_open", ())] == before + 1
    open_streams.give_back(4242)
    assert scrape(client)[("rag_event_streams_open", ())] == before


def test_a_reused_answer_counts_as_an_answered_run_and_as_a_reuse(
    client, metrics_token, knowledge_base, fake_chat, settings
):
    settings.RAG_REUSE = "exact"
    execute_run(run_create(query="How do I start the beta service?"))
    before = scrape(client)

    repeat = run_submit(query="How do I start the beta service?")

    after = scrape(client)
    assert repeat.reused_from_id is not None
    assert delta(before, after, "rag_runs_reused_total") == 1
    assert delta(before, after, "rag_runs_started_total") == 1
    assert delta(before, after, "rag_runs_finished_total", status="answered") == 1
