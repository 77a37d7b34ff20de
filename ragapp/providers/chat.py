"""Chat models for the graph, from the provider `RAG_CHAT_PROVIDER` names (see registry.py).

Nothing is built at import time. `get_chat_models()` builds clients on first use, so importing,
`manage.py check` and the health endpoint never need a key, a server or a model file.
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.utils.module_loading import import_string
from langchain_core.language_models import BaseChatModel

from ragapp.graph.context import ChatModels
from ragapp.providers.registry import get_provider

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
        settings.RAG_LOCAL_READER,
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
    declared = get_provider(provider, setting="RAG_CHAT_PROVIDER").chat
    makers = {"writer": import_string(declared.build)}
    # Grading reads the documents and writes a verdict; a provider may serve it apart.
    makers["reader"] = import_string(declared.build_reader) if declared.build_reader else None
    built: dict[tuple[str, str], BaseChatModel] = {}  # one client per role and model name

    def get(name: str, role: str = "writer") -> BaseChatModel:
        role = role if makers[role] else "writer"
        key = (role, "" if declared.one_model_for_every_job else name)
        if key not in built:
            built[key] = makers[role](name)
        return built[key]

    return ChatModels(
        generator=get(names["generation"]),
        grader=get(names["grading"], "reader"),
        broadener=get(names["broadening"]),
        relevance_method=settings.RAG_RELEVANCE_JUDGE,
        faithfulness_method=settings.RAG_FAITHFULNESS_JUDGE,
        bounded_schemas=declared.bounded_schemas,
        names=names,
    )
