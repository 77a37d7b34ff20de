"""Who may read a run: every page, API endpoint and event channel, tried as anonymous, as another
user and as staff. Expect refused, refused, allowed; and another user's run never shows up."""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from ragapp.models import Chunk
from ragapp.trace.stream import RunChannelManager, channel_for
from tests.ragapp.factories import finished_run

pytestmark = pytest.mark.django_db

SECRET_QUESTION = "How do I rotate the vault key for tenant 4711?"


@pytest.fixture
def owned_run(users, knowledge_base):
    return finished_run(
        owner=users["owner"],
        query=SECRET_QUESTION,
        answer="Use the vault CLI.",
        metadata={"sources": []},
        done=True,
    )


def run_urls(run):
    """(method, url, kind) for every place that shows one run."""
    chunk = Chunk.objects.first()
    return [
        ("get", f"/runs/{run.pk}/", "page"),
        ("get", f"/runs/{run.pk}/answer/", "page"),
        ("get", f"/runs/{run.pk}/replay/", "page"),
        ("post", f"/runs/{run.pk}/feedback/", "page"),
        ("get", f"/runs/{run.pk}/events/", "stream"),
        ("get", f"/api/runs/{run.pk}", "api"),
        ("get", f"/api/runs/{run.pk}/events", "api"),
        ("post", f"/api/runs/{run.pk}/feedback", "api"),
        # Not a run, but only for signed-in users:
        ("get", f"/chunks/{chunk.pk}/", "signed-in"),
    ]


def call(client, method, url):
    if method == "post":
        data = {"rating": 1}
        if url.startswith("/api/"):
            return client.post(url, data, format="json")
        return client.post(url, data)
    return client.get(url)


def test_anonymous_is_refused_everywhere(owned_run):
    for method, url, kind in run_urls(owned_run):
        client = APIClient() if kind == "api" else Client()
        response = call(client, method, url)
        if kind == "api":
            assert response.status_code == 401, url
        elif kind == "stream":
            assert response.status_code == 403, url
        else:
            assert response.status_code == 302, url
            assert response["Location"].startswith("/accounts/login/"), url
    for url in ("/", "/history/", "/api/runs"):
        assert Client().get(url).status_code in (302, 401), url


def test_another_user_gets_404_for_every_place_of_the_run_and_never_sees_it_listed(
    owned_run, users
):
    pages, api = Client(), APIClient()
    pages.force_login(users["other"])
    api.force_authenticate(users["other"])
    for method, url, kind in run_urls(owned_run):
        response = call(api if kind == "api" else pages, method, url)
        expected = 200 if kind == "signed-in" else 404
        assert response.status_code == expected, url
    for url in ("/", "/history/", f"/history/?q={SECRET_QUESTION[:12]}"):
        assert SECRET_QUESTION not in pages.get(url).content.decode(), url
    assert api.get("/api/runs").json()["count"] == 0
    assert api.get("/api/runs", {"q": "vault"}).json()["count"] == 0


def test_staff_may_read_every_place_of_the_run(owned_run, users):
    pages, api = Client(), APIClient()
    pages.force_login(users["staff"])
    api.force_authenticate(users["staff"])
    for method, url, kind in run_urls(owned_run):
        if method == "post" or kind == "stream":
            continue  # feedback is the reader's own opinion; streams are checked below
        response = call(api if kind == "api" else pages, method, url)
        assert response.status_code == 200, url
    # A live stream needs a real server (tests/ragapp/test_streaming.py); the decision it
    # makes is the channel manager's.
    assert RunChannelManager().can_read_channel(users["staff"], channel_for(owned_run.pk))
    assert not RunChannelManager().can_read_channel(users["other"], channel_for(owned_run.pk))
    assert SECRET_QUESTION in pages.get("/history/").content.decode()
    assert api.get("/api/runs").json()["count"] == 1


def test_the_owner_may_read_and_rate_their_run(owned_run, users):
    pages, api = Client(), APIClient()
    pages.force_login(users["owner"])
    api.force_authenticate(users["owner"])
    for method, url, kind in run_urls(owned_run):
        if kind == "stream":
            continue
        response = call(api if kind == "api" else pages, method, url)
        if method == "post" and kind == "page":
            # The page's feedback redirects back to the run, never to the login page.
            assert response.status_code == 302, url
            assert response["Location"] == f"/runs/{owned_run.pk}/", url
        elif method == "post":
            assert response.status_code in (200, 201), url
        else:
            assert response.status_code == 200, url
    assert RunChannelManager().can_read_channel(users["owner"], channel_for(owned_run.pk))
