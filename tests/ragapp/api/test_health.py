"""GET /api/rag: health that needs no key, no sign-in, and builds no model client."""

import pytest

from ragapp.providers import chat, embeddings, local_llm

pytestmark = pytest.mark.django_db


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


def test_health_with_no_key_is_200_and_builds_no_client(
    client, settings, no_model_may_be_built, knowledge_base
):
    settings.OPENAI_API_KEY = ""
    settings.RAG_CHAT_PROVIDER = "local"
    settings.RAG_EMBEDDING_PROVIDER = "local"

    response = client.get("/api/rag")

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


def test_openai_without_a_key_is_reported_degraded_not_an_error(
    client, settings, no_model_may_be_built
):
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = None
    settings.RAG_CHAT_PROVIDER = "openai"
    settings.RAG_EMBEDDING_PROVIDER = "openai"

    body = client.get("/api/rag").json()

    assert body["status"] == "degraded" and body["models_ready"] is False
    assert "OPENAI_API_KEY" in body["providers"]["embedding"]["detail"]
    assert not body["providers"]["chat"]["ready"]
    assert body["index"] == {
        "documents": 0,
        "chunks": 0,
        "embedding_model": None,
        "dimensions": None,
    }


def test_an_unknown_local_model_is_not_ready(client, settings, no_model_may_be_built):
    settings.RAG_CHAT_PROVIDER = "local"
    settings.RAG_GRADER_MODEL = "no-such-model"
    settings.RAG_BROADEN_MODEL = "no-such-model"

    chat_status = client.get("/api/rag").json()["providers"]["chat"]

    assert chat_status["ready"] is False
    detail = chat_status["models"]["no-such-model"]["detail"]
    assert "No packaged local model 'no-such-model'" in detail


def test_a_database_that_does_not_answer_is_503(client, monkeypatch):
    from django.db import OperationalError

    import ragapp.selectors as selectors

    def down():
        return {"status": "error", "error": OperationalError.__name__}

    monkeypatch.setattr(selectors, "database_status", down)
    response = client.get("/api/rag")
    assert response.status_code == 503
    assert response.json()["database"] == {"status": "error", "error": "OperationalError"}
