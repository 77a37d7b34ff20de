"""Threads in the portal and the admin: History by thread, the thread page and its replay, the
follow-up under an answer; and who may read a thread or post into it (owner, another user,
staff, anonymous), through every page, the API and the run event streams."""

import json
import re

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from ragapp.models import QueryRun, Thread
from ragapp.runs.runner import execute_run
from ragapp.services import run_create
from ragapp.trace.stream import RunChannelManager, channel_for
from tests.ragapp.factories import finished_run

pytestmark = pytest.mark.django_db

SECRET = "How do I rotate the vault key for tenant 4711?"


def signed_in(user, *, csrf=False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def follow_up(first: QueryRun, query: str, **extra) -> QueryRun:
    """A finished follow-up in `first`'s thread."""
    return finished_run(owner=first.owner, query=query, thread=first.thread, **extra)


@pytest.fixture
def thread(users):
    """The owner's thread of two finished runs; the second was condensed."""
    first = finished_run(owner=users["owner"], query=SECRET, answer="Use the vault CLI.", done=True)
    follow_up(
        first,
        "and on Windows?",
        answer="Use vault.exe.",
        metadata={"standalone_question": "How do I rotate the vault key on Windows?"},
        done=True,
    )
    return first.thread


def thread_urls(thread):
    """(method, url, kind) for every place that shows or continues one thread."""
    return [
        ("get", f"/threads/{thread.pk}/", "page"),
        ("get", f"/threads/{thread.pk}/replay/", "page"),
        ("post", f"/threads/{thread.pk}/ask/", "post"),
        ("get", f"/api/threads/{thread.pk}", "api"),
        ("post", "/api/rag", "api-post"),
    ]


def call(client, method, url, thread):
    if url == "/api/rag":
        return client.post(url, {"query": "and then?", "thread": thread.pk}, format="json")
    if method == "post":
        return client.post(url, {"query": "and then?"})
    return client.get(url)


# --- Access -----------------------------------------------------------------------------------


def test_anonymous_is_refused_every_place_of_a_thread(thread):
    for method, url, kind in thread_urls(thread):
        client = APIClient() if kind.startswith("api") else Client()
        response = call(client, method, url, thread)
        if kind.startswith("api"):
            assert response.status_code == 401, url
        else:
            assert response.status_code == 302, url
            assert response["Location"].startswith("/accounts/login/"), url
    assert thread.runs.count() == 2


def test_another_user_gets_404_everywhere_and_never_sees_the_thread(thread, users):
    pages, api = signed_in(users["other"]), APIClient()
    api.force_authenticate(users["other"])
    for method, url, kind in thread_urls(thread):
        response = call(api if kind.startswith("api") else pages, method, url, thread)
        assert response.status_code == 404, url
    for run in thread.runs.all():
        assert pages.get(f"/runs/{run.pk}/events/").status_code == 404
        assert not RunChannelManager().can_read_channel(users["other"], channel_for(run.pk))
    assert thread.runs.count() == 2  # nothing was posted into it
    assert SECRET not in pages.get("/history/").content.decode()
    assert api.get("/api/threads").json()["count"] == 0


def test_staff_may_read_a_thread_but_not_post_into_it(thread, users):
    pages, api = signed_in(users["staff"]), APIClient()
    api.force_authenticate(users["staff"])
    for method, url, kind in thread_urls(thread):
        response = call(api if kind.startswith("api") else pages, method, url, thread)
        # A run is always its asker's: a follow-up from staff would put words in the owner's
        # conversation.
        assert response.status_code == (404 if method == "post" else 200), url
    assert thread.runs.count() == 2
    assert SECRET in pages.get("/history/").content.decode()
    assert api.get("/api/threads").json()["count"] == 1
    # Staff reading someone's run get no follow-up box under it.
    latest = thread.runs.order_by("-created_at").first()
    assert 'id="follow-up"' not in pages.get(f"/runs/{latest.pk}/").content.decode()
    assert 'id="follow-up"' not in pages.get(f"/threads/{thread.pk}/").content.decode()


def test_the_owner_may_read_and_continue_their_thread(thread, users):
    pages, api = signed_in(users["owner"]), APIClient()
    api.force_authenticate(users["owner"])
    for method, url, kind in thread_urls(thread):
        response = call(api if kind.startswith("api") else pages, method, url, thread)
        expected = {"page": 200, "api": 200, "post": 302, "api-post": 202}[kind]
        assert response.status_code == expected, url
    assert thread.runs.count() == 4


@pytest.mark.parametrize("bad", ["abc", "-1", "1.5"])
def test_a_malformed_thread_id_is_a_4xx(users, bad):
    pages = signed_in(users["owner"])
    assert pages.get(f"/threads/{bad}/").status_code == 404
    assert pages.post(f"/threads/{bad}/ask/", {"query": "q"}).status_code == 404
    api = APIClient()
    api.force_authenticate(users["owner"])
    assert api.get(f"/api/threads/{bad}").status_code == 404
    response = api.post("/api/rag", {"query": "q", "thread": bad}, format="json")
    assert response.status_code == 400 and "thread" in response.json()
    assert not QueryRun.objects.exists()


def test_a_thread_that_does_not_exist_is_a_404(users):
    pages = signed_in(users["owner"])
    assert pages.get("/threads/987654/").status_code == 404
    assert pages.post("/threads/987654/ask/", {"query": "q"}).status_code == 404
    api = APIClient()
    api.force_authenticate(users["owner"])
    assert api.get("/api/threads/987654").status_code == 404
    too_big = api.post("/api/rag", {"query": "q", "thread": 2**70}, format="json")
    assert too_big.status_code == 400  # not a database error
    assert api.post("/api/rag", {"query": "q", "thread": 987654}, format="json").status_code == 404
    assert not QueryRun.objects.exists()


# --- History, the thread page, replay ---------------------------------------------------------


def test_history_lists_threads_with_their_runs_and_filters_by_runs(thread, users):
    finished_run(owner=users["owner"], query="Where are the backups?", status="refused")
    finished_run(owner=users["other"], query="Mallory's own question")
    client = signed_in(users["owner"])
    body = client.get(reverse("history")).content.decode()
    rows = re.findall(r"<tr><td data-label=\"Thread\">.*?</tr>", body, re.S)
    assert len(rows) == 2 and "Mallory" not in body
    # Last asked in first; one row per thread however many runs, with their number.
    assert "backups" in rows[0] and SECRET in rows[1]
    assert re.search(r'data-label="Runs">2<', rows[1]) and re.search(r'"Runs">1<', rows[0])
    assert "Refused" in rows[0] and "Answered" in rows[1]  # the latest run's status
    assert f'href="/threads/{thread.pk}/replay/"' in rows[1]
    # A filter matches the runs: the follow-up's words find its thread, titled by its first.
    body = client.get(reverse("history"), {"q": "windows"}).content.decode()
    assert SECRET in body and "backups" not in body and "(1 threads)" in body
    body = client.get(reverse("history"), {"status": "refused"}).content.decode()
    assert "backups" in body and SECRET not in body


def test_the_thread_page_lists_its_runs_in_order_with_links(thread, users):
    body = signed_in(users["owner"]).get(f"/threads/{thread.pk}/").content.decode()
    first, second = thread.runs.order_by("created_at")
    assert body.index(SECRET) < body.index("and on Windows?")
    for run in (first, second):
        assert f'href="/runs/{run.pk}/"' in body and f'href="/runs/{run.pk}/replay/"' in body
    assert "Answered as:</span> How do I rotate the vault key on Windows?" in body
    assert f'href="/threads/{thread.pk}/replay/"' in body
    assert f'action="/threads/{thread.pk}/ask/"' in body  # the owner may go on from here


def test_the_thread_replay_carries_every_runs_trace_in_order(thread, users):
    body = signed_in(users["owner"]).get(f"/threads/{thread.pk}/replay/").content.decode()
    data = re.search(r'<script id="trace-data" type="application/json">(.*?)</script>', body, re.S)
    turns = json.loads(data.group(1))
    runs = list(thread.runs.order_by("created_at"))
    assert [t["run"] for t in turns] == [str(r.pk) for r in runs]
    assert [[e["kind"] for e in t["events"]] for t in turns] == [["retrieve", "done"]] * 2
    assert turns[0]["answer_url"] == f"/runs/{runs[0].pk}/answer/?replay=1"
    assert 'data-thread="1"' in body and body.count('class="thread-turn"') == 2


def test_the_run_page_names_its_thread_and_its_standalone_question(thread, users):
    first, second = thread.runs.order_by("created_at")
    client = signed_in(users["owner"])
    body = client.get(f"/runs/{second.pk}/").content.decode()
    assert f'href="/threads/{thread.pk}/"' in body
    assert "Answered as:</span> How do I rotate the vault key on Windows?" in body
    assert "In the thread" in body and "The first question of" not in body
    first_page = client.get(f"/runs/{first.pk}/").content.decode()
    assert "Answered as" not in first_page
    # A thread's first question does not name itself as its thread.
    assert "The first question of" in first_page and "In the thread" not in first_page
    assert f'href="/threads/{thread.pk}/"' in first_page
    # The follow-up box sits under the finished answer, posting into this thread.
    assert f'action="/threads/{thread.pk}/ask/"' in body and 'name="csrfmiddlewaretoken"' in body
    answer = client.get(f"/runs/{second.pk}/answer/").content.decode()  # what a live page gets
    assert 'id="follow-up"' in answer
    assert (
        'id="follow-up"' not in client.get(f"/runs/{second.pk}/answer/?replay=1").content.decode()
    )


def test_no_follow_up_box_before_the_run_has_finished(users):
    run = run_create(query="still queued", owner=users["owner"])
    client = signed_in(users["owner"])
    assert 'id="follow-up"' not in client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="follow-up"' not in client.get(f"/threads/{run.thread_id}/").content.decode()


# --- Asking a follow-up -----------------------------------------------------------------------


def test_a_follow_up_joins_the_thread_and_opens_the_new_runs_page(thread, users):
    response = signed_in(users["owner"]).post(
        f"/threads/{thread.pk}/ask/", {"query": "and on a Mac?"}
    )
    run = QueryRun.objects.get(query="and on a Mac?")
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert run.thread_id == thread.pk and run.owner == users["owner"]
    assert Thread.objects.count() == 1
    # "New question" (the Ask page) starts a thread of its own.
    signed_in(users["owner"]).post(reverse("ask"), {"query": "Something else entirely"})
    assert QueryRun.objects.get(query="Something else entirely").thread_id != thread.pk


def test_a_follow_up_needs_csrf_and_keeps_the_ask_forms_limits(thread, users, settings):
    url = f"/threads/{thread.pk}/ask/"
    assert signed_in(users["owner"], csrf=True).post(url, {"query": "q"}).status_code == 403
    client = signed_in(users["owner"])
    assert client.get(url).status_code == 405
    empty = client.post(url, {"query": "   "})
    assert empty.status_code == 400 and "The query is empty." in empty.content.decode()
    settings.RAG_MAX_QUERY_CHARS = 10
    long = client.post(url, {"query": "x" * 11})
    body = long.content.decode()
    assert long.status_code == 400 and "the limit is 10" in body
    # Shown again as a follow-up of the same thread, the question kept in the box.
    assert f'action="{url}"' in body and "x" * 11 in body
    assert thread.runs.count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_follow_up_through_the_graph_is_condensed_and_shows_it(knowledge_base, fake_chat, users):
    first = run_create(query="How do I start the beta service?", owner=users["owner"])
    execute_run(first)
    second = run_create(query="and which port?", owner=users["owner"], thread=first.thread)
    execute_run(second)
    second.refresh_from_db()
    standalone = second.response_metadata["standalone_question"]
    assert standalone == "and which port? (about: How do I start the beta service?)"
    assert second.events.order_by("seq").first().kind == "condense"
    body = signed_in(users["owner"]).get(f"/runs/{second.pk}/").content.decode()
    assert "Answered as:</span> and which port? (about: How do I start the beta service?)" in body


# --- The admin --------------------------------------------------------------------------------


def test_the_admin_shows_a_thread_with_its_runs_linked_from_each_run(thread, admin_client):
    runs = list(thread.runs.order_by("created_at"))
    listing = admin_client.get(reverse("admin:ragapp_thread_changelist")).content.decode()
    assert SECRET in listing
    page = admin_client.get(reverse("admin:ragapp_thread_change", args=[thread.pk]))
    body = page.content.decode()
    assert page.status_code == 200
    assert body.index(SECRET) < body.index("and on Windows?")
    for run in runs:
        assert reverse("admin:ragapp_queryrun_change", args=[run.pk]) in body
    assert 'name="runs-0-query"' not in body  # read-only: no inputs
    run_page = admin_client.get(reverse("admin:ragapp_queryrun_change", args=[runs[1].pk]))
    assert reverse("admin:ragapp_thread_change", args=[thread.pk]) in run_page.content.decode()
    assert admin_client.get(reverse("admin:ragapp_thread_add")).status_code == 403
