"""Threads through the API: continue one with POST /api/rag, list and read them, and each run
naming its thread (who may do what is in tests/ragapp/test_threads.py)."""

import pytest

from ragapp.models import QueryRun
from ragapp.runs.runner import execute_run
from ragapp.services import run_create
from tests.ragapp.api.conftest import token_client
from tests.ragapp.factories import finished_run

pytestmark = pytest.mark.django_db


def test_a_follow_up_continues_the_thread_and_each_run_names_it(users):
    api = token_client(users["owner"])
    first = api.post("/api/rag", {"query": "How do I start beta?"}, format="json").json()
    second = api.post(
        "/api/rag", {"query": "and stop it?", "thread": first["thread"]}, format="json"
    )
    assert second.status_code == 202
    body = second.json()
    assert body["thread"] == first["thread"]
    assert body["urls"]["thread"] == f"http://testserver/api/threads/{first['thread']}"
    # Without `thread`, a new one.
    third = api.post("/api/rag", {"query": "Something else"}, format="json").json()
    assert third["thread"] != first["thread"]
    listed = {run["id"]: run["thread"] for run in api.get("/api/runs").json()["results"]}
    assert listed == {
        first["id"]: first["thread"],
        body["id"]: first["thread"],
        third["id"]: third["thread"],
    }


def test_the_thread_list_is_yours_last_asked_in_first_and_paginated(users):
    old = finished_run(owner=users["owner"], query="An old question")
    newer = finished_run(owner=users["owner"], query="A newer question", status="refused")
    finished_run(owner=users["owner"], query="and a follow-up", thread=old.thread)
    finished_run(owner=users["other"], query="Someone else's")
    api = token_client(users["owner"])
    body = api.get("/api/threads").json()
    assert body["count"] == 2
    assert [t["title"] for t in body["results"]] == ["An old question", "A newer question"]
    first = body["results"][0]
    assert (first["id"], first["run_count"], first["latest_status"]) == (
        old.thread_id,
        2,
        "answered",
    )
    assert first["owner"] == "owner"
    assert first["urls"] == {
        "thread": f"http://testserver/api/threads/{old.thread_id}",
        "page": f"http://testserver/threads/{old.thread_id}/",
    }
    assert body["results"][1]["latest_status"] == "refused"
    page = api.get("/api/threads", {"page_size": 1, "page": 2}).json()
    assert [t["id"] for t in page["results"]] == [newer.thread_id] and page["next"] is None
    # The filters are the runs list's, matched against a thread's runs.
    assert [t["id"] for t in api.get("/api/threads", {"q": "follow-up"}).json()["results"]] == [
        old.thread_id
    ]
    assert api.get("/api/threads", {"status": "nonsense"}).status_code == 400
    assert token_client(users["staff"]).get("/api/threads").json()["count"] == 3


def test_one_thread_has_its_runs_in_order(users):
    first = finished_run(owner=users["owner"], query="How do I start beta?")
    second = finished_run(owner=users["owner"], query="and stop it?", thread=first.thread)
    body = token_client(users["owner"]).get(f"/api/threads/{first.thread_id}").json()
    assert body["title"] == "How do I start beta?" and body["run_count"] == 2
    assert [run["id"] for run in body["runs"]] == [str(first.pk), str(second.pk)]
    assert body["runs"][1]["thread"] == first.thread_id


@pytest.mark.django_db(transaction=True)
def test_a_condensed_follow_up_shows_its_standalone_question(knowledge_base, fake_chat, users):
    first = run_create(query="How do I start the beta service?", owner=users["owner"])
    execute_run(first)
    second = run_create(query="and which port?", owner=users["owner"], thread=first.thread)
    execute_run(second)
    api = token_client(users["owner"])
    body = api.get(f"/api/runs/{second.pk}").json()
    assert body["thread"] == first.thread_id
    assert (
        body["standalone_question"] == "and which port? (about: How do I start the beta service?)"
    )
    assert body["query"] == "and which port?"  # the original stays on the run
    assert api.get(f"/api/runs/{first.pk}").json()["standalone_question"] == ""
    assert QueryRun.objects.get(pk=second.pk).status == "answered"
