"""What the configured providers are and whether they can serve, without building any client.

The health endpoint reports this; it must answer with no API key, no model file loaded and no
network, so each provider's status check (declared in registry.py) reads settings, package
metadata and this process's caches only.
"""

from __future__ import annotations

from django.conf import settings
from django.utils.module_loading import import_string

from ragapp.providers import embeddings
from ragapp.providers.chat import chat_model_names
from ragapp.providers.registry import get_provider


def providers_status() -> dict:
    """The embedding and chat providers in use, each with `ready` and `loaded` flags."""
    return {"embedding": _embedding_status(), "chat": _chat_status()}


def _embedding_status() -> dict:
    provider = settings.RAG_EMBEDDING_PROVIDER
    check = get_provider(provider, setting="RAG_EMBEDDING_PROVIDER").embeddings.status
    status = import_string(check)()
    return {
        "provider": provider,
        "model": status.model,
        "ready": status.ready,
        "loaded": provider in embeddings._cache,
        "detail": status.detail,
    }


def _chat_status() -> dict:
    provider = settings.RAG_CHAT_PROVIDER
    check = import_string(get_provider(provider, setting="RAG_CHAT_PROVIDER").chat.status)
    names = chat_model_names()
    models = {}
    for name in dict.fromkeys(names.values()):  # each distinct model once, in job order
        status = check(name)
        models[name] = {"ready": status.ready, "loaded": status.loaded, "detail": status.detail}
    return {
        "provider": provider,
        "jobs": names,
        "models": models,
        "ready": all(m["ready"] for m in models.values()),
    }
