"""GET /api/runs, /api/runs/{id}, /api/runs/{id}/events; POST /api/runs/{id}/feedback."""

import datetime

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from ragapp.models import Feedback, QueryRun, TraceEvent
from ragapp.services import run_create
from tests.ragapp.api.conftest import token_client
from tests.ragapp.conftest import PASSWORD
from tests.ragapp.factories import finished_run

pytestmark = pytest.mark.django_db


def test_the_list_shows_only_your_runs_newest_first(users):
    first = run_create(query="first", owner=users["owner"])
    second = run_create(query="second", owner=users["owner"])
    run_create(query="not yours", owner=users["other"])

    body = token_client(users["owner"]).get("/api/runs").json()

    assert body["count"] == 2
    assert [r["id"] for r in body["results"]] == [str(second.pk), str(first.pk)]
    assert body["results"][0]["owner"] == "owner"
    assert body["results"][0]["urls"]["run"].endswith(f"/api/runs/{second.pk}")


def test_staff_see_every_run(users):
    run_create(query="a", owner=users["owner"])
    run_create(query="b", owner=users["other"])
    assert token_client(users["staff"]).get("/api/runs").json()["count"] == 2


def test_the_list_filters_by_status_search_and_date_and_paginates(users, answered_run):
    owner = token_client(users["owner"])
    queued = run_create(query="How are invoices billed?", owner=users["owner"])
    QueryRun.objects.filter(pk=queued.pk).update(
        created_at=timezone.now() - datetime.timedelta(days=3)
    )
    today = timezone.now().date()

    def ids(**params):
        return [r["id"] for r in owner.get("/api/runs", params).json()["results"]]

    assert ids(status="answered") == [str(answered_run.pk)]
    assert ids(status="queued") == [str(queued.pk)]
    assert ids(q="INVOICES") == [str(queued.pk)]  # question or answer, any case
    assert ids(since=today.isoformat()) == [str(answered_run.pk)]
    assert ids(until=(today - datetime.timedelta(days=1)).isoformat()) == [str(queued.pk)]
    assert ids(risk="low") == [str(answered_run.pk)]

    page = owner.get("/api/runs", {"page_size": 1, "page": 2}).json()
    assert page["count"] == 2 and [r["id"] for r in page["results"]] == [str(queued.pk)]
    assert page["next"] is None and page["previous"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"status": "done"}, "status"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-02-02", "until": "2026-01-01"}, "until"),
        ({"q": "x" * 201}, "q"),
    ],
)
def test_bad_filters_are_400(users, params, field):
    response = token_client(users["owner"]).get("/api/runs", params)
    assert response.status_code == 400 and field in response.json()


def test_a_page_past_the_end_is_404(users):
    run_create(query="a", owner=users["owner"])
    assert token_client(users["owner"]).get("/api/runs", {"page": 9}).status_code == 404


def test_run_detail_has_answer_verdict_sources_and_metadata(users, answered_run):
    body = token_client(users["owner"]).get(f"/api/runs/{answered_run.pk}").json()

    assert body["status"] == "answered" and body["answer"] == answered_run.answer
    assert body["faithfulness_score"] == pytest.approx(0.95)
    assert body["hallucination_risk"] == "low" and body["refusal_reason"] == ""
    assert body["sources"][0]["source_path"] == "docs/beta.md" and body["sources"][0]["n"] == 1
    assert body["metadata"]["models"]["provider"] == "fake"
    assert body["metadata"]["tokens"]["fake-chat"]["calls"] > 0
    assert body["error"] == ""


def test_other_users_runs_are_404_and_anonymous_is_401(users, answered_run):
    other = token_client(users["other"])
    for url in (f"/api/runs/{answered_run.pk}", f"/api/runs/{answered_run.pk}/events"):
        assert other.get(url).status_code == 404
        assert APIClient().get(url).status_code == 401
        assert token_client(users["staff"]).get(url).status_code == 200
    feedback = other.post(f"/api/runs/{answered_run.pk}/feedback", {"rating": 1}, format="json")
    assert feedback.status_code == 404
    assert APIClient().get("/api/runs").status_code == 401
    assert token_client(users["owner"]).get("/api/runs/not-a-uuid").status_code == 404


def test_events_are_the_stored_trace_resumable_after_a_seq(users, answered_run):
    owner = token_client(users["owner"])
    stored = list(TraceEvent.objects.filter(run=answered_run).order_by("seq"))

    body = owner.get(f"/api/runs/{answered_run.pk}/events").json()

    assert body["run"] == str(answered_run.pk) and body["status"] == "answered"
    assert body["finished"] is True
    assert [(e["seq"], e["kind"]) for e in body["events"]] == [(e.seq, e.kind) for e in stored]
    assert body["events"][0]["payload"]["query"] == "How do I start the beta service?"
    assert body["events"][-1] == {
        "seq": stored[-1].seq,
        "kind": "done",
        "node": "",
        "payload": {"status": "answered"},
        "created_at": stored[-1].created_at.isoformat(),
        "duration_ms": None,
    }
    rest = owner.get(f"/api/runs/{answered_run.pk}/events", {"after": 5}).json()["events"]
    assert [e["seq"] for e in rest] == [e.seq for e in stored[5:]]
    assert owner.get(f"/api/runs/{answered_run.pk}/events", {"after": 999}).json()["events"] == []
    bad = owner.get(f"/api/runs/{answered_run.pk}/events", {"after": -1})
    assert bad.status_code == 400 and "after" in bad.json()


def test_a_queued_run_has_no_events_and_is_not_finished(users):
    run = run_create(query="q", owner=users["owner"])
    body = token_client(users["owner"]).get(f"/api/runs/{run.pk}/events").json()
    assert body == {"run": str(run.pk), "status": "queued", "finished": False, "events": []}


def test_feedback_is_recorded_and_can_be_changed(users, answered_run):
    owner = token_client(users["owner"])
    url = f"/api/runs/{answered_run.pk}/feedback"

    first = owner.post(url, {"rating": 1, "comment": "spot on"}, format="json")
    second = owner.post(url, {"rating": -1}, format="json")

    assert first.status_code == 201 and first.json()["rating"] == 1
    assert second.status_code == 201
    feedback = Feedback.objects.get(run=answered_run)
    assert (feedback.rating, feedback.comment, feedback.user) == (-1, "", users["owner"])


@pytest.mark.parametrize(
    ("body", "field"),
    [({"rating": 5}, "rating"), ({}, "rating"), ({"rating": 1, "comment": "x" * 2001}, "comment")],
)
def test_bad_feedback_is_400(users, answered_run, body, field):
    response = token_client(users["owner"]).post(
        f"/api/runs/{answered_run.pk}/feedback", body, format="json"
    )
    assert response.status_code == 400 and field in response.json()
    assert not Feedback.objects.exists()


def test_feedback_on_an_unfinished_run_is_400(users):
    run = run_create(query="q", owner=users["owner"])
    response = token_client(users["owner"]).post(
        f"/api/runs/{run.pk}/feedback", {"rating": 1}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {"detail": ["Feedback is for finished runs."]}


def test_a_token_is_exchanged_for_username_and_password_and_throttled(users, settings):
    from django.core.cache import cache

    cache.clear()
    settings.RAG_API_TOKEN_RATE = "3/min"
    client = APIClient()

    good = client.post("/api/token", {"username": "owner", "password": PASSWORD})
    wrong = client.post("/api/token", {"username": "owner", "password": "nope"}, format="json")

    assert good.status_code == 200 and len(good.json()["token"]) == 40
    assert wrong.status_code == 400
    client.credentials(HTTP_AUTHORIZATION=f"Token {good.json()['token']}")
    assert client.get("/api/runs").status_code == 200
    client.credentials()
    assert client.post("/api/token", {"username": "owner", "password": "x"}).status_code == 400
    throttled = client.post("/api/token", {"username": "owner", "password": PASSWORD})
    assert throttled.status_code == 429 and "Retry-After" in throttled
    cache.clear()


def test_guessing_one_username_does_not_lock_its_owner_out_and_forwarded_for_is_not_trusted(
    users, settings
):
    from django.core.cache import cache

    cache.clear()
    settings.RAG_API_TOKEN_RATE = "3/min"
    client = APIClient()
    # Guesses at one username from many addresses: each address is counted on its own, and the
    # owner, from an address of their own, still gets a token (tests/ragapp/test_sign_in_throttle.py
    # holds the limits per address and per username from an address).
    for n in range(3):
        wrong = client.post(
            "/api/token", {"username": "owner", "password": "x"}, REMOTE_ADDR=f"10.0.0.{n}"
        )
        assert wrong.status_code == 400
    owner = client.post(
        "/api/token", {"username": "owner", "password": PASSWORD}, REMOTE_ADDR="10.0.0.9"
    )
    assert owner.status_code == 200 and owner.json()["token"]
    # One address claiming to be many through X-Forwarded-For: the per-address limit holds.
    cache.clear()
    codes = [
        client.post(
            "/api/token",
            {"username": f"user{n}", "password": "x"},
            HTTP_X_FORWARDED_FOR=f"192.0.2.{n}",
        ).status_code
        for n in range(4)
    ]
    assert codes == [400, 400, 400, 429]
    cache.clear()


def test_the_trace_is_finished_only_once_done_is_stored(users):
    run = finished_run(owner=users["owner"])
    url = f"/api/runs/{run.pk}/events"
    owner = token_client(users["owner"])
    assert owner.get(url).json()["finished"] is False  # answered, but `done` is not written yet
    TraceEvent.objects.create(run=run, seq=2, kind="done", payload={"status": "answered"})
    assert owner.get(url).json()["finished"] is True


def test_a_withheld_draft_is_served_to_nobody(users, client):
    """The portal does not show a refused run's draft; the API agrees, for owner and staff."""
    draft = "Set vault.rotate=always to rotate keys hourly."
    first = "The documents do not mention key rotation."
    run = finished_run(
        owner=users["owner"],
        status="refused",
        answer="I can't give a reliable answer to this question.",
        metadata={
            "refusal_reason": "unfaithful",
            "draft_answer": draft,
            # The draft refused before the run read on (RAG_READ_ON), withheld the same way.
            "first_draft_answer": first,
            "sources": [],
        },
        done=True,
    )
    for user in (users["owner"], users["staff"]):
        body = token_client(user).get(f"/api/runs/{run.pk}")
        assert body.status_code == 200
        assert not {"draft_answer", "first_draft_answer"} & set(body.json()["metadata"])
        assert draft not in body.content.decode() and first not in body.content.decode()
        assert body.json()["metadata"]["refusal_reason"] == "unfaithful"
        client.force_login(user)
        for page in (f"/runs/{run.pk}/", f"/runs/{run.pk}/answer/"):
            response = client.get(page)
            assert response.status_code == 200
            assert draft not in response.content.decode()
            assert first not in response.content.decode()


def test_a_failed_run_shows_its_cause_and_only_staff_see_the_address(users, client):
    from ragapp.services import run_fail, run_start

    error = "ChatModelError: the chat model server at http://10.0.0.5:8080/v1 failed (HTTP 500)"
    run = run_fail(run=run_start(run=run_create(query="q", owner=users["owner"])), error=error)
    shown = {}
    for name in ("owner", "staff"):
        api = token_client(users[name]).get(f"/api/runs/{run.pk}").json()["error"]
        client.force_login(users[name])
        page = client.get(f"/runs/{run.pk}/answer/").content.decode()
        shown[name] = (api, page)
    owner_api, owner_page = shown["owner"]
    assert "HTTP 500" in owner_api and "10.0.0.5" not in owner_api
    assert "HTTP 500" in owner_page and "10.0.0.5" not in owner_page
    staff_api, staff_page = shown["staff"]
    assert staff_api == error and "http://10.0.0.5:8080/v1" in staff_page
