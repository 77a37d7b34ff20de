"""CSRF on every state-changing form, and secrets kept out of error pages, logs and traces."""

import logging

import pytest
from django.test import Client, override_settings

from ragapp.models import Feedback, QueryRun
from ragapp.runs.runner import execute_run
from ragapp.services import run_create

pytestmark = pytest.mark.django_db

SECRET_KEY = "django-insecure-but-very-recognisable-secret-0123456789"
API_KEY = "sk-test-this-key-must-never-leak-42"


def signed_in(user, *, csrf: bool) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def test_every_state_changing_form_refuses_a_post_without_the_csrf_token(users, knowledge_base):
    run = run_create(query="How do I start the beta service?", owner=users["owner"])
    QueryRun.objects.filter(pk=run.pk).update(status=QueryRun.Status.ANSWERED)
    posts = {
        "/": {"query": "How do I start the beta service?"},
        f"/runs/{run.pk}/feedback/": {"rating": "1"},
        "/accounts/logout/": {},
        "/accounts/password_change/": {
            "old_password": "pw-tests-123",
            "new_password1": "a-new-Passw0rd!",
            "new_password2": "a-new-Passw0rd!",
        },
        "/admin/logout/": {},
    }
    staff = signed_in(users["staff"], csrf=True)
    owner = signed_in(users["owner"], csrf=True)
    for url, data in posts.items():
        client = staff if url.startswith("/admin/") else owner
        response = client.post(url, data)
        assert response.status_code == 403, url
        assert b"CSRF" in response.content, url
    anonymous = Client(enforce_csrf_checks=True)
    for url in ("/accounts/login/", "/admin/login/"):
        response = anonymous.post(url, {"username": "owner", "password": "pw-tests-123"})
        assert response.status_code == 403, url
    assert QueryRun.objects.count() == 1 and Feedback.objects.count() == 0
    # With the token, the same form goes through: the 403 was the CSRF check, not something else.
    owner.get("/")
    token = owner.cookies["csrftoken"].value
    ok = owner.post(f"/runs/{run.pk}/feedback/", {"rating": "1", "csrfmiddlewaretoken": token})
    assert ok.status_code in (200, 302) and Feedback.objects.count() == 1


@override_settings(DEBUG=False, SECRET_KEY=SECRET_KEY)
def test_error_pages_show_no_secret(users, settings, monkeypatch):
    settings.OPENAI_API_KEY = API_KEY

    def explode(*args, **kwargs):
        raise RuntimeError("the database exploded")

    monkeypatch.setattr("ragapp.views.render", explode)
    client = signed_in(users["owner"], csrf=False)
    client.raise_request_exception = False
    response = client.get("/")
    assert response.status_code == 500
    body = response.content.decode()
    assert "Server Error" in body
    for secret in (SECRET_KEY, API_KEY, "the database exploded", "Traceback"):
        assert secret not in body
    missing = client.get("/no/such/page/")
    assert missing.status_code == 404
    assert (
        SECRET_KEY not in missing.content.decode() and "urlpatterns" not in missing.content.decode()
    )


def test_a_failed_run_keeps_the_api_key_out_of_its_trace_and_logs(
    users, knowledge_base, settings, caplog
):
    """The openai provider pointed at a closed port: the failure is stored, the key is not."""
    from ragapp.providers.chat import clear_chat_models_cache

    settings.RAG_CHAT_PROVIDER = "openai"
    settings.RAG_LLM_MAX_RETRIES = 0
    settings.RAG_LLM_TIMEOUT = 2
    settings.OPENAI_API_KEY = API_KEY
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
    clear_chat_models_cache()
    caplog.set_level(logging.DEBUG)
    run = run_create(query="How do I start the beta service?", owner=users["owner"])
    try:
        execute_run(run)
    finally:
        clear_chat_models_cache()
    run.refresh_from_db()
    assert run.status == QueryRun.Status.FAILED and run.error
    stored = [run.error, str(run.response_metadata), caplog.text]
    stored += [str(event.payload) for event in run.events.all()]
    assert all(API_KEY not in text for text in stored)
    page = signed_in(users["owner"], csrf=False).get(f"/runs/{run.pk}/")
    assert page.status_code == 200 and API_KEY not in page.content.decode()
