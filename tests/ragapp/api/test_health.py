"""Health: GET /api/rag and GET /healthz need no key or sign-in and build no model client.

Anyone gets the status; only users (signed in, or with an API token) get the detail.
"""

import pytest
from django.test import Client

from ragapp.providers import chat, embeddings, local_llm
from tests.ragapp.api.conftest import token_client

pytestmark = pytest.mark.django_db
DETAIL = {"database", "index", "providers", "models_ready"}


@pytest.fixture(autouse=True)
def no_cached_counts(fresh_cache):
    """The health check caches its counts; each test reads its own."""


@pytest.fixture
def no_model_may_be_built(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the health check built a model client")

    monkeypatch.setattr(chat, "_build", refuse)
    monkeypatch.setattr(embeddings, "_build", refuse)
    monkeypatch.setattr(local_llm, "_start", refuse)
    chat.clear_chat_models_cache()
    embeddings.clear_embeddings_cache()


@pytest.fixture
def member(users) -> Client:
    client = Client()
    client.force_login(users["other"])
    return client


def test_health_with_no_key_is_200_and_builds_no_client(
    member, settings, no_model_may_be_built, knowledge_base
):
    settings.OPENAI_API_KEY = ""
    settings.RAG_CHAT_PROVIDER = "local"
    settings.RAG_EMBEDDING_PROVIDER = "local"

    response = member.get("/api/rag")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["models_ready"] is True
    assert body["database"] == {"status": "ok"}
    assert body["index"]["documents"] == 3 and body["index"]["chunks"] == 5
    assert body["index"]["embedding_model"].startswith("fake/")
    chat_status = body["providers"]["chat"]
    assert chat_status["provider"] == "local"
    assert chat_status["jobs"]["generation"] == settings.RAG_GENERATION_MODEL
    assert all(m["ready"] and not m["loaded"] for m in chat_status["models"].values())
    assert body["providers"]["embedding"]["model"] == "local/all-MiniLM-L6-v2-int8"
    assert chat._cache == {} and embeddings._cache == {} and local_llm._servers == {}
    assert local_llm._readers == {}


def test_openai_without_a_key_is_reported_degraded_not_an_error(
    member, settings, no_model_may_be_built
):
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = None
    settings.RAG_CHAT_PROVIDER = "openai"
    settings.RAG_EMBEDDING_PROVIDER = "openai"

    body = member.get("/api/rag").json()

    assert body["status"] == "degraded" and body["models_ready"] is False
    assert "OPENAI_API_KEY" in body["providers"]["embedding"]["detail"]
    assert not body["providers"]["chat"]["ready"]
    assert body["index"] == {
        "documents": 0,
        "chunks": 0,
        "embedding_model": None,
        "dimensions": None,
    }


def test_an_unknown_local_model_is_not_ready(member, settings, no_model_may_be_built):
    settings.RAG_CHAT_PROVIDER = "local"
    settings.RAG_GRADER_MODEL = "no-such-model"
    settings.RAG_BROADEN_MODEL = "no-such-model"

    chat_status = member.get("/api/rag").json()["providers"]["chat"]

    assert chat_status["ready"] is False
    detail = chat_status["models"]["no-such-model"]["detail"]
    assert "No packaged local model 'no-such-model'" in detail


@pytest.fixture
def database_down(monkeypatch):
    from django.db import OperationalError

    import ragapp.selectors as selectors
    import ragapp.views as portal_views

    def down():
        return {"status": "error", "error": OperationalError.__name__}

    monkeypatch.setattr(selectors, "database_status", down)
    monkeypatch.setattr(portal_views, "database_status", down)


def test_a_database_that_does_not_answer_is_503(member, database_down):
    response = member.get("/api/rag")
    assert response.status_code == 503
    assert response.json()["database"] == {"status": "error", "error": "OperationalError"}


# --- What anonymous callers see ------------------------------------------------------------


def test_anonymous_callers_get_the_status_and_no_detail(client, knowledge_base):
    response = client.get("/api/rag")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}

    liveness = client.get("/healthz")
    assert (liveness.status_code, liveness.json()) == (200, {"status": "ok"})


def test_a_degraded_status_is_visible_to_anyone_its_reason_only_to_users(client, settings):
    settings.OPENAI_API_KEY = ""
    settings.RAG_CHAT_PROVIDER = "openai"

    assert client.get("/api/rag").json() == {"status": "degraded"}


def test_anonymous_callers_learn_that_the_database_is_down_not_why(client, database_down):
    api = client.get("/api/rag")
    assert (api.status_code, api.json()) == (503, {"status": "error"})
    liveness = client.get("/healthz")
    assert (liveness.status_code, liveness.json()) == (503, {"status": "error"})


def test_users_get_the_detail_with_a_token_or_signed_in(users, member, database_down):
    by_token = token_client(users["owner"]).get("/api/rag")
    assert by_token.status_code == 503 and set(by_token.json()) >= DETAIL
    assert member.get("/healthz").json() == {"status": "error", "database": "OperationalError"}
