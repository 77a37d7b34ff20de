"""Chat models for the graph (`RAG_CHAT_PROVIDER`): openai, local, or the fake for tests.

Nothing is built at import time. `get_chat_models()` builds clients on first use, so importing,
`manage.py check` and the health endpoint never need a key, a server or a model file.
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from ragapp.graph.context import ChatModels

_cache: dict[tuple, ChatModels] = {}
_lock = threading.Lock()


def chat_model_names() -> dict[str, str]:
    """Which model does which job, from settings (no client is built)."""
    return {
        "generation": settings.RAG_GENERATION_MODEL,
        "grading": settings.RAG_GRADER_MODEL,
        "broadening": settings.RAG_BROADEN_MODEL,
    }


def get_chat_models() -> ChatModels:
    """The configured chat models, built once per process."""
    names = chat_model_names()
    key = (
        settings.RAG_CHAT_PROVIDER,
        tuple(sorted(names.items())),
        # What the clients are built with: a change means new clients, not stale ones.
        settings.OPENAI_BASE_URL,
        settings.RAG_LLM_TIMEOUT,
        settings.RAG_LLM_MAX_RETRIES,
    )
    with _lock:
        if key not in _cache:
            _cache[key] = _build(settings.RAG_CHAT_PROVIDER, names)
        return _cache[key]


def clear_chat_models_cache() -> None:
    """Forget built models (tests switch providers)."""
    with _lock:
        _cache.clear()


def _build(provider: str, names: dict[str, str]) -> ChatModels:
    if provider == "openai":
        return _models(names, _openai_model)
    if provider == "local":
        from ragapp.providers.local_llm import local_chat_model

        # llama.cpp constrains decoding to the schema, so length caps in it bound the reply.
        return _models(names, local_chat_model, bounded_schemas=True)
    if provider == "fake":
        from ragapp.providers.fake_chat import FakeChatModel, FakeScript

        model = FakeChatModel(script=FakeScript(), delay_s=settings.RAG_FAKE_CHAT_DELAY_MS / 1000)
        return ChatModels(
            generator=model,
            grader=model,
            broadener=model,
            relevance_method=settings.RAG_RELEVANCE_JUDGE,
            faithfulness_method=settings.RAG_FAITHFULNESS_JUDGE,
            names=names,
        )
    raise ImproperlyConfigured(f"Unknown RAG_CHAT_PROVIDER {provider!r}")


def _models(names: dict[str, str], make, *, bounded_schemas: bool = False) -> ChatModels:
    built: dict[str, object] = {}  # one client per distinct model name

    def get(name: str):
        if name not in built:
            built[name] = make(name)
        return built[name]

    return ChatModels(
        generator=get(names["generation"]),
        grader=get(names["grading"]),
        broadener=get(names["broadening"]),
        relevance_method=settings.RAG_RELEVANCE_JUDGE,
        faithfulness_method=settings.RAG_FAITHFULNESS_JUDGE,
        bounded_schemas=bounded_schemas,
        names=names,
    )


def _openai_model(name: str):
    from langchain_openai import ChatOpenAI

    if not settings.OPENAI_API_KEY and not settings.OPENAI_BASE_URL:
        raise ImproperlyConfigured(
            "RAG_CHAT_PROVIDER=openai needs OPENAI_API_KEY (or OPENAI_BASE_URL for a server that "
            "needs no key)."
        )
    return ChatOpenAI(
        model=name,
        api_key=settings.OPENAI_API_KEY or "unused",
        base_url=settings.OPENAI_BASE_URL,
        temperature=0,
        timeout=settings.RAG_LLM_TIMEOUT,
        max_retries=settings.RAG_LLM_MAX_RETRIES,
    )
