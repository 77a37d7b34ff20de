"""POST /api/rag streamed over a real uvicorn server: the whole trace, then the stream closes."""

import time

import httpx
import jwt
import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from ragapp.models import QueryRun, TraceEvent
from tests.ragapp.live_server import read_closed_stream, signed_in

pytestmark = pytest.mark.django_db(transaction=True)

SSE = {"Accept": "text/event-stream"}


def api_client(base: str, username: str = "alice") -> httpx.Client:
    user = get_user_model().objects.get(username=username)
    token, _ = Token.objects.get_or_create(user=user)
    return httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Token {token.key}"})


def sse_events(response: httpx.Response) -> list[dict]:
    """Every event of a stream that the server closes, keep-alives and stream-open left out."""
    return read_closed_stream(response)[0]


def test_post_streams_the_full_trace_and_closes_after_done(server, django_user_model):
    client = api_client(server)
    body = {"query": "How do I restart the worker?"}

    with client.stream("POST", "/api/rag", json=body, headers=SSE) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response)  # returns only because the server ends the stream

    run = QueryRun.objects.get()
    stored = list(TraceEvent.objects.filter(run=run).order_by("seq"))
    assert [(e["seq"], e["kind"]) for e in events] == [(e.seq, e.kind) for e in stored]
    assert [e["seq"] for e in events] == list(range(1, len(stored) + 1))
    assert all(e["event"] == e["kind"] for e in events)
    assert [e["kind"] for e in events][-2:] == ["answer", "done"]
    assert events[0]["kind"] == "retrieve" and events[0]["payload"]["query"] == body["query"]
    assert events[-2]["payload"]["answer"] == run.answer and run.status == "answered"


def test_the_events_endpoint_resumes_live_and_says_204_when_there_is_nothing_left(server):
    client = api_client(server)
    created = client.post("/api/rag", json={"query": "How do I restart the worker?"})
    assert created.status_code == 202
    events_url = created.json()["urls"]["events"]

    with client.stream("GET", events_url, headers=SSE, params={"after": 2}) as response:
        rest = sse_events(response)
    run_id = created.json()["id"]
    total = TraceEvent.objects.filter(run_id=run_id).count()
    assert [e["seq"] for e in rest] == list(range(3, total + 1))
    assert rest[-1]["kind"] == "done"

    resume = {**SSE, "Last-Event-ID": f"run-{run_id}:{total - 1}"}
    with client.stream("GET", events_url, headers=resume) as response:
        assert [e["kind"] for e in sse_events(response)] == ["done"]
    finished = client.get(events_url, headers=SSE, params={"after": total})
    assert finished.status_code == 204

    # Malformed resume points are ignored, never an error stream.
    odd = {**SSE, "Last-Event-ID": f"run-{run_id}:\u00b2,junk".encode()}
    with client.stream("GET", events_url, headers=odd, params={"after": total - 1}) as response:
        assert response.status_code == 200
        assert [e["kind"] for e in sse_events(response)] == ["done"]


def es_meta(secret_key: str, *, user, channels: list[str], expires_in: int) -> str:
    """A django-eventstream `es-meta` token, signed as the library signs it."""
    claims = {"user": user, "channels": channels, "exp": int(time.time()) + expires_in}
    return jwt.encode(claims, secret_key, algorithm="HS256")


@pytest.mark.parametrize("surface", ["api", "portal"])
def test_library_parameters_are_ignored_on_both_streams(server, surface):
    """`recover`, `link` and `es-meta` (the library's proxy and hand-over parameters) do nothing.

    `recover=true` made the library read a GRIP proxy's state that is not there (a 500); an
    expired token raised; a valid token signed with the server's own key would name its own user
    and channels, so it must not be honoured either: access is the signed-in user's, always.
    """
    api = api_client(server)
    run_id = api.post("/api/rag", json={"query": "How do I restart the worker?"}).json()["id"]
    with api.stream("GET", f"/api/runs/{run_id}/events", headers=SSE) as response:
        read_closed_stream(response)  # the run has finished
    client = api if surface == "api" else signed_in(server)
    url = f"/api/runs/{run_id}/events" if surface == "api" else f"/runs/{run_id}/events/"
    total_after = {"after": 0} if surface == "api" else {}
    key = (server.data_dir / "secret_key").read_text().strip()
    channel = f"run-{run_id}"
    tokens = {
        "expired": es_meta(key, user="anonymous", channels=[channel], expires_in=-60),
        "other key": jwt.encode(
            {"user": "anonymous", "channels": [channel], "exp": int(time.time()) + 600},
            "not-the-key",
            algorithm="HS256",
        ),
        "valid, anonymous": es_meta(key, user="anonymous", channels=[channel], expires_in=600),
    }
    for params in [
        {"recover": "true"},
        {"link": "next"},
        *({"es-meta": t} for t in tokens.values()),
    ]:
        with client.stream("GET", url, headers=SSE, params={**total_after, **params}) as response:
            assert response.status_code == 200, params
            kinds = (
                [e["kind"] for e in read_closed_stream(response)[0]] if surface == "api" else None
            )
        if kinds is not None:
            assert kinds[-1] == "done", params
    # Without a session, a valid token for the channel does not open it.
    anonymous = httpx.Client(base_url=server, timeout=30)
    response = anonymous.get(url, headers=SSE, params={"es-meta": tokens["valid, anonymous"]})
    assert response.status_code in (401, 403, 302), response.status_code


def test_streams_keep_the_ownership_rules(server, django_user_model):
    client = api_client(server)
    run_id = client.post("/api/rag", json={"query": "How do I restart the worker?"}).json()["id"]
    django_user_model.objects.create_user("mallory", password="pw-mallory-123")
    intruder = api_client(server, "mallory")
    assert intruder.get(f"/api/runs/{run_id}/events", headers=SSE).status_code == 404
    anonymous = httpx.get(f"{server}/api/runs/{run_id}/events", headers=SSE)
    assert anonymous.status_code == 401
    assert anonymous.headers["content-type"] == "application/json"
    bad = client.post("/api/rag", json={"query": ""}, headers=SSE)
    assert bad.status_code == 400 and bad.json() == {"query": ["The query is empty."]}
