"""Model faults against a real OpenAI-compatible server that misbehaves on purpose.

Each fault goes through the product's `openai` chat provider and a real run (`execute_run`):
bounded retries with backoff, then a failed run whose trace ends with `error` then `done` and
whose `error` says why. The dummy API key reaches the server but never the run, its trace or the
logs, even when the server echoes it back.
"""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from deploy.web import free_port
from ragapp.graph import hypothesis, prompts
from ragapp.models import QueryRun, TraceEvent
from ragapp.providers.chat import clear_chat_models_cache
from ragapp.providers.model_errors import without_retries
from ragapp.runs.runner import execute_run
from ragapp.services import run_create
from ragapp.trace.redaction import public_message
from tests.ragapp.live_server import read_closed_stream
from tests.ragapp.providers.misbehaving_server import (
    ANSWER,
    FAITHFUL,
    Attempt,
    MisbehavingModelServer,
    Reply,
    completion,
    error_body,
    healthy,
)

DUMMY_KEY = "sk-test-DUMMY-KEY-must-never-leak-4242"
# RAG_LLM_MAX_RETRIES: 2 attempts per call, 4 where the backoff's growth is measured. Neither is
# the SDK's own default (2 retries), so a setting that never reached the client would show.
RETRIES = 1
MORE_RETRIES = 3
TIMEOUT_S = 1.0  # RAG_LLM_TIMEOUT
QUESTION = "How do I start the beta service?"
# The openai SDK's backoff before retry n (0-based): 0.5 s * 2**n, less up to 25 % jitter.
BACKOFF_FLOOR_S = [0.375, 0.75, 1.5]


@pytest.fixture
def openai_chat(settings, caplog):
    """The product's `openai` chat provider, configured for short timeouts and few retries."""
    settings.RAG_CHAT_PROVIDER = "openai"
    settings.OPENAI_API_KEY = DUMMY_KEY
    settings.RAG_LLM_TIMEOUT = TIMEOUT_S
    settings.RAG_LLM_MAX_RETRIES = RETRIES
    settings.RAG_RELEVANCE_JUDGE = "structured"
    settings.RAG_FAITHFULNESS_JUDGE = "structured"
    settings.RAG_RELEVANCE_THRESHOLD = 0.75
    settings.RAG_TOP_K = 1  # one document, so one relevance call whose attempts are counted
    settings.RAG_RETRIEVAL_MODE = "vector"
    settings.RAG_HYDE = False  # the openai default: the first model call is a relevance grade
    # Everything the client and its HTTP stack log is captured, so the leak checks see it all.
    caplog.set_level(logging.DEBUG)
    for name in ("openai", "httpx", "httpx2", "httpcore", "httpcore2"):
        caplog.set_level(logging.DEBUG, logger=name)
    clear_chat_models_cache()
    yield settings
    clear_chat_models_cache()


def run_against(server: MisbehavingModelServer, settings, users) -> QueryRun:
    """A real run with the chat provider pointed at `server`."""
    settings.OPENAI_BASE_URL = server.base_url
    run = run_create(query=QUESTION, owner=users["owner"])
    execute_run(run)
    run.refresh_from_db()
    return run


def kinds(run: QueryRun) -> list[str]:
    return list(TraceEvent.objects.filter(run=run).order_by("seq").values_list("kind", flat=True))


def assert_failed_visibly(run: QueryRun, caplog, *reasons: str) -> None:
    """Failed, the trace ends error -> done, the error says why, and the key is nowhere."""
    events = list(TraceEvent.objects.filter(run=run).order_by("seq"))
    assert run.status == QueryRun.Status.FAILED
    assert [e.kind for e in events][-2:] == ["error", "done"]
    assert events[-1].payload == {"status": "failed"}
    assert events[-2].payload["message"] == public_message(run.error)  # no server address
    for reason in reasons:
        assert reason.lower() in run.error.lower(), run.error
    assert_no_key(
        run.error,
        json.dumps([e.payload for e in events]),
        json.dumps(run.response_metadata),
        caplog.text,
    )


def assert_no_key(*texts: str) -> None:
    for text in texts:
        assert DUMMY_KEY not in text
        assert DUMMY_KEY[10:30] not in text  # not even a recognisable piece of it


def retry_delays(caplog) -> list[float]:
    """The waits the openai client chose before each retry, from its own log."""
    return [
        float(record.args[0])
        for record in caplog.records
        if record.name.startswith("openai") and str(record.msg).startswith("Retrying request")
    ]


def assert_retried(server: MisbehavingModelServer, schema: str | None, retries: int) -> None:
    """One call, retried `retries` times: the SDK numbers its attempts 0, 1, 2 ..."""
    assert [a.retry_count for a in server.attempts] == list(range(1 + retries))
    assert {a.schema for a in server.attempts} == {schema}
    assert {a.sent_key for a in server.attempts} == {DUMMY_KEY}  # the key did reach the server


def test_a_model_that_never_answers_times_out_each_attempt_then_the_run_fails(
    knowledge_base, users, openai_chat, caplog
):
    def hang(attempt: Attempt) -> Reply:
        return Reply(delay_s=TIMEOUT_S * 10)  # accepts the request, then says nothing

    with MisbehavingModelServer(hang) as server:
        run = run_against(server, openai_chat, users)

    assert_retried(server, "DocumentRelevance", RETRIES)
    delays = retry_delays(caplog)
    assert len(delays) == RETRIES
    # Each attempt was given the whole timeout, and the next came only after the backoff.
    for gap, delay in zip(server.gaps(), delays, strict=True):
        assert gap >= TIMEOUT_S and gap >= delay
    assert_failed_visibly(
        run, caplog, "did not answer within 1 s (RAG_LLM_TIMEOUT)", "gave up after 2 attempts"
    )
    assert kinds(run) == ["retrieve", "error", "done"]


def test_http_500_is_retried_with_growing_backoff_then_the_run_fails(
    knowledge_base, users, openai_chat, caplog
):
    def broken(attempt: Attempt) -> Reply:
        # A careless upstream that quotes the request's credentials in its error.
        return Reply(status=500, body=error_body(f"upstream failed for Bearer {attempt.sent_key}"))

    openai_chat.RAG_LLM_MAX_RETRIES = MORE_RETRIES
    with MisbehavingModelServer(broken) as server:
        run = run_against(server, openai_chat, users)

    assert_retried(server, "DocumentRelevance", MORE_RETRIES)
    delays = retry_delays(caplog)
    assert len(delays) == MORE_RETRIES
    for n, delay in enumerate(delays):
        assert delay >= BACKOFF_FLOOR_S[n]
    # Exponential: the floor of each wait is above the cap of the one before.
    assert delays == sorted(delays) and len(set(delays)) == len(delays)
    for gap, delay in zip(server.gaps(), delays, strict=True):
        assert gap >= delay  # the client really waited before coming back
    assert_failed_visibly(
        run,
        caplog,
        "HTTP 500",
        "upstream failed",
        "gave up after 4 attempts (RAG_LLM_MAX_RETRIES=3)",
    )
    assert "upstream failed for Bearer [redacted]);" in run.error


def test_a_rejected_key_is_not_retried_and_the_run_says_what_to_check(
    knowledge_base, users, openai_chat, caplog
):
    def unauthorized(attempt: Attempt) -> Reply:
        key = attempt.sent_key
        masked = f"{key[:3]}*****{key[-4:]}"  # as OpenAI's own 401 shows it
        return Reply(status=401, body=error_body(f"Incorrect API key provided: {masked}", "auth"))

    with MisbehavingModelServer(unauthorized) as server:
        run = run_against(server, openai_chat, users)

    assert len(server.attempts) == 1  # retrying cannot fix a bad key
    assert retry_delays(caplog) == []
    assert_failed_visibly(run, caplog, "HTTP 401", "check OPENAI_API_KEY", "not retried")


def test_429_waits_what_retry_after_asks_then_the_run_fails(
    knowledge_base, users, openai_chat, caplog
):
    def throttled(attempt: Attempt) -> Reply:
        return Reply(
            status=429,
            body=error_body("Rate limit reached for requests", "requests"),
            headers={"Retry-After": "1"},
        )

    with MisbehavingModelServer(throttled) as server:
        run = run_against(server, openai_chat, users)

    assert_retried(server, "DocumentRelevance", RETRIES)
    assert retry_delays(caplog) == [1.0] * RETRIES  # Retry-After, not the shorter backoff
    gaps = server.gaps()
    assert len(gaps) == RETRIES and all(gap >= 1.0 for gap in gaps)
    assert_failed_visibly(
        run, caplog, "HTTP 429", "rate limit", "Retry-After: 1 s", "gave up after 2 attempts"
    )


@pytest.mark.parametrize(
    "reply, why",
    [
        ("Sure! The document is relevant.", "Invalid JSON"),
        ('{"relevant": "maybe"}', "relevant: Input should be a valid boolean"),
    ],
    ids=["not-json", "wrong-fields"],
)
def test_a_malformed_relevance_grade_is_asked_again_once_then_the_run_fails(
    knowledge_base, users, openai_chat, caplog, reply, why
):
    with MisbehavingModelServer(lambda attempt: Reply(body=completion(reply))) as server:
        run = run_against(server, openai_chat, users)

    # A 200 is not retried by the client; the judge asks once more, a fresh request each time.
    assert [(a.schema, a.retry_count) for a in server.attempts] == [("DocumentRelevance", 0)] * 2
    assert_failed_visibly(
        run, caplog, "grade_docs: malformed structured output twice", "valid DocumentRelevance", why
    )
    assert kinds(run) == ["retrieve", "error", "done"]  # no grade was made up in its place


def test_a_malformed_faithfulness_grade_fails_the_run_instead_of_passing_the_answer(
    knowledge_base, users, openai_chat, caplog
):
    def bad_judge(attempt: Attempt) -> Reply:
        if attempt.schema == "AnswerFaithfulness":
            return Reply(body=completion('{"faithfulness_score": "very", "reasoning": 3}'))
        return healthy(attempt)

    with MisbehavingModelServer(bad_judge) as server:
        run = run_against(server, openai_chat, users)

    assert [a.schema for a in server.attempts] == [
        "DocumentRelevance",
        None,  # the answer was drafted
        "AnswerFaithfulness",
        "AnswerFaithfulness",
    ]
    assert_failed_visibly(
        run, caplog, "grade_answer: malformed structured output twice", "faithfulness_score"
    )
    assert kinds(run) == ["retrieve", "grade", "grade_docs", "generate", "error", "done"]
    assert run.answer == ""  # the unjudged draft is not shown


def test_one_malformed_grade_is_recovered_by_the_judges_retry(
    knowledge_base, users, openai_chat, caplog
):
    def flaky_judge(attempt: Attempt) -> Reply:
        if attempt.schema == "AnswerFaithfulness" and attempt.number == 3:
            return Reply(body=completion('{"faithfulness_score": 0.9'))  # cut off
        return healthy(attempt)

    with MisbehavingModelServer(flaky_judge) as server:
        run = run_against(server, openai_chat, users)

    assert [a.schema for a in server.attempts].count("AnswerFaithfulness") == 2
    assert run.status == QueryRun.Status.ANSWERED and run.answer == ANSWER
    assert run.faithfulness_score == FAITHFUL["faithfulness_score"]
    assert kinds(run)[-2:] == ["answer", "done"]


def test_a_server_that_goes_away_midway_is_retried_then_the_run_fails(
    knowledge_base, users, openai_chat, caplog
):
    def answer_once_then_vanish(attempt: Attempt) -> Reply:
        # The relevance grade is answered, then the listener closes before the reply is sent.
        return Reply(body=healthy(attempt).body, shut_down_first=True)

    with MisbehavingModelServer(answer_once_then_vanish) as server:
        run = run_against(server, openai_chat, users)

    assert [a.schema for a in server.attempts] == ["DocumentRelevance"]  # nothing got in again
    delays = retry_delays(caplog)  # the refused attempts, seen from the client
    assert len(delays) == RETRIES
    assert_failed_visibly(run, caplog, "Connection refused", "gave up after 2 attempts")
    # The run got as far as generating: the first calls were answered normally.
    assert kinds(run) == ["retrieve", "grade", "grade_docs", "error", "done"]


def test_a_server_that_drops_connections_midway_is_retried_then_the_run_fails(
    knowledge_base, users, openai_chat, caplog
):
    def answer_once_then_hang_up(attempt: Attempt) -> Reply:
        return healthy(attempt) if attempt.number == 1 else Reply(drop=True)

    with MisbehavingModelServer(answer_once_then_hang_up) as server:
        run = run_against(server, openai_chat, users)

    first, *dropped = server.attempts
    assert first.schema == "DocumentRelevance"
    assert [(a.schema, a.retry_count) for a in dropped] == [(None, n) for n in range(1 + RETRIES)]
    assert_failed_visibly(
        run, caplog, "connection to the chat model server", "gave up after 2 attempts"
    )
    assert kinds(run) == ["retrieve", "grade", "grade_docs", "error", "done"]


# The live server's environment is fixed before it starts, so the model server's port is too.
LIVE_MODEL_PORT = free_port()
LIVE_ENV = {
    "RAG_CHAT_PROVIDER": "openai",
    "OPENAI_API_KEY": DUMMY_KEY,
    "OPENAI_BASE_URL": f"http://127.0.0.1:{LIVE_MODEL_PORT}/v1",
    "RAG_LLM_TIMEOUT": "1",
    "RAG_LLM_MAX_RETRIES": "1",
    "RAG_RELEVANCE_JUDGE": "structured",
    "RAG_TOP_K": "1",
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("server", [LIVE_ENV], indirect=True)
def test_the_live_stream_of_a_failed_run_ends_with_error_then_done_and_closes(server):
    def broken(attempt: Attempt) -> Reply:
        return Reply(status=503, body=error_body("overloaded"))

    user = get_user_model().objects.get(username="alice")
    token, _ = Token.objects.get_or_create(user=user)
    client = httpx.Client(
        base_url=server, timeout=30, headers={"Authorization": f"Token {token.key}"}
    )
    with MisbehavingModelServer(broken, port=LIVE_MODEL_PORT) as model:
        request = {"query": "How do I restart the worker?"}
        sse = {"Accept": "text/event-stream"}
        with client.stream("POST", "/api/rag", json=request, headers=sse) as response:
            assert response.status_code == 200
            events, raw = read_closed_stream(response, timeout_s=30)

    assert [e["kind"] for e in events][-2:] == ["error", "done"]
    assert events[-1]["payload"] == {"status": "failed"}
    assert len(model.attempts) == 2  # RAG_LLM_MAX_RETRIES=1 in the server process
    run = QueryRun.objects.get()
    assert run.status == QueryRun.Status.FAILED
    assert "HTTP 503" in run.error
    assert events[-2]["payload"]["message"] == public_message(run.error)
    assert_no_key(raw)


def test_an_answer_whose_stream_breaks_off_fails_the_run_and_says_why(
    knowledge_base, users, openai_chat, caplog
):
    def break_off(attempt: Attempt) -> Reply:
        if attempt.schema is None:  # the answer: three words of it, then the server hangs up
            return Reply(body=completion(ANSWER), stream_events=3)
        return healthy(attempt)

    with MisbehavingModelServer(break_off) as server:
        run = run_against(server, openai_chat, users)

    assert [a.schema for a in server.attempts] == ["DocumentRelevance", None]
    assert_failed_visibly(
        run, caplog, "peer closed connection without sending complete message body"
    )
    # Half an answer is never checked or shown as if it were the whole one.
    assert kinds(run) == ["retrieve", "grade", "grade_docs", "error", "done"]


def test_an_answer_whose_stream_stalls_times_out_and_fails_the_run(
    knowledge_base, users, openai_chat, caplog
):
    def stall(attempt: Attempt) -> Reply:
        if attempt.schema is None:
            return Reply(body=completion(ANSWER), stream_events=3, stall_s=TIMEOUT_S * 10)
        return healthy(attempt)

    with MisbehavingModelServer(stall) as server:
        run = run_against(server, openai_chat, users)

    assert [a.schema for a in server.attempts] == ["DocumentRelevance", None]
    assert_failed_visibly(run, caplog, "did not answer within 1 s (RAG_LLM_TIMEOUT)")
    assert kinds(run) == ["retrieve", "grade", "grade_docs", "error", "done"]


def test_a_stalled_passage_is_cut_at_its_own_limit_and_the_question_is_searched_alone(
    knowledge_base, users, openai_chat, caplog, monkeypatch
):
    """RAG_HYDE's passage is tried once and waits far less than RAG_LLM_TIMEOUT; the run goes on."""
    openai_chat.RAG_HYDE = True
    openai_chat.RAG_LLM_MAX_RETRIES = MORE_RETRIES  # what the passage would take if retried
    openai_chat.RAG_LLM_TIMEOUT = 30.0  # the graph's other calls may take this long
    monkeypatch.setattr(hypothesis, "HYPOTHESIS_TIMEOUT_S", 0.5)
    clear_chat_models_cache()

    def asks_for_passage(attempt: Attempt) -> bool:
        return prompts.HYPOTHESIS_TASK[:40] in json.dumps(attempt.body.get("messages", []))

    def passage_stalls(attempt: Attempt) -> Reply:
        if asks_for_passage(attempt):
            # Longer than RAG_LLM_TIMEOUT: only the passage's own limit ends the wait in time.
            return Reply(delay_s=60.0)
        return healthy(attempt)

    with MisbehavingModelServer(passage_stalls) as server:
        run = run_against(server, openai_chat, users)

    passage_tries = [a for a in server.attempts if asks_for_passage(a)]
    assert [a.retry_count for a in passage_tries] == [0]  # one attempt, not 1 + MORE_RETRIES
    # It was cut at the passage's limit, not RAG_LLM_TIMEOUT's 30 s: the grade came next.
    assert not asks_for_passage(server.attempts[1])
    assert server.attempts[1].arrived - server.attempts[0].arrived < 5.0
    assert run.status == QueryRun.Status.ANSWERED, run.error
    retrieved = TraceEvent.objects.get(run=run, kind="retrieve").payload
    assert retrieved["hypothesis"] == ""
    problem = retrieved["hypothesis_problem"]
    assert "did not answer within 0.5 s (the passage's own limit)" in problem
    assert "this call is not retried" in problem
    assert server.base_url.split("//")[1] not in problem  # the address is withheld
    assert_no_key(json.dumps(retrieved), caplog.text)


def test_a_call_without_retries_is_a_copy_and_the_model_keeps_its_own(openai_chat):
    from ragapp.providers.chat import get_chat_models
    from ragapp.providers.fake_chat import FakeChatModel, FakeScript

    openai_chat.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    clear_chat_models_cache()
    model = get_chat_models().broadener
    once = without_retries(model)
    assert (once.max_retries, once.root_client.max_retries) == (0, 0)
    assert once.client._client is once.root_client  # the completions of the one-attempt client
    assert once.root_async_client.max_retries == 0
    assert once.async_client._client is once.root_async_client
    # The model's own clients keep RAG_LLM_MAX_RETRIES, and share one connection pool.
    assert (model.max_retries, model.root_client.max_retries) == (RETRIES, RETRIES)
    assert once.root_client._client is model.root_client._client
    assert once.model_name == model.model_name and once.request_timeout == model.request_timeout
    fake = FakeChatModel(script=FakeScript())
    assert without_retries(fake) is fake  # no OpenAI client: nothing to change


def test_the_passage_never_waits_longer_than_rag_llm_timeout(openai_chat):
    """A RAG_LLM_TIMEOUT under the passage's own limit stays the limit, and is named as such."""
    from ragapp.providers.chat import get_chat_models

    openai_chat.RAG_LLM_TIMEOUT = 2.0
    openai_chat.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    clear_chat_models_cache()
    limit = hypothesis._timeout(get_chat_models().broadener)
    assert (limit.seconds, limit.source) == (2.0, "RAG_LLM_TIMEOUT")
    assert limit.retried is False  # the shorter limit still comes with a single attempt
