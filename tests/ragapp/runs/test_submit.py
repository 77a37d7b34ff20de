"""Limits on submission: runs per user, queued or running, and the queue, for portal and API."""

import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from ragapp.models import QueryRun
from ragapp.services import run_create, run_start

pytestmark = pytest.mark.django_db


def active_runs(user, n: int, *, running: int = 0) -> None:
    for i in range(n):
        run = run_create(query=f"question {i}", owner=user)
        if i < running:
            run_start(run=run)


def ask_in_portal(user, question="How do I restart?"):
    client = Client()
    client.force_login(user)
    return client.post("/", {"query": question})


def ask_in_api(user, question="How do I restart?"):
    client = APIClient()
    client.force_authenticate(user)
    return client.post("/api/rag", {"query": question}, format="json")


def test_a_user_at_the_cap_is_refused_on_both_surfaces_and_others_are_not(users, settings):
    settings.RAG_MAX_ACTIVE_RUNS_PER_USER = 2
    active_runs(users["owner"], 2, running=1)  # one queued and one running count alike

    page = ask_in_portal(users["owner"])
    assert page.status_code == 429
    text = re.sub(r"\s+", " ", page.content.decode())
    assert "You have 2 questions being answered; the limit is 2." in text
    assert "How do I restart?" in text  # the question stays in the box

    api = ask_in_api(users["owner"])
    assert api.status_code == 429 and int(api["Retry-After"]) > 0
    assert "the limit is 2" in api.json()["detail"]
    assert QueryRun.objects.filter(owner=users["owner"]).count() == 2  # nothing was created

    assert ask_in_portal(users["other"]).status_code == 302  # another user is not held back
    assert ask_in_api(users["other"]).status_code == 202


def test_finished_runs_do_not_count(users, settings):
    settings.RAG_MAX_ACTIVE_RUNS_PER_USER = 1
    from ragapp.services import run_fail

    run_fail(run=run_create(query="old", owner=users["owner"]), error="Boom")
    assert ask_in_api(users["owner"]).status_code == 202


def test_a_full_queue_says_busy_to_everyone(users, settings):
    settings.RAG_MAX_QUEUED_RUNS = 3
    settings.RAG_MAX_ACTIVE_RUNS_PER_USER = 5
    active_runs(users["other"], 3)

    api = ask_in_api(users["owner"])
    assert api.status_code == 429 and "busy" in api.json()["detail"]
    page = ask_in_portal(users["owner"])
    assert page.status_code == 429 and "The assistant is busy" in page.content.decode()
    assert not QueryRun.objects.filter(owner=users["owner"]).exists()
