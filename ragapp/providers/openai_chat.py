"""The `openai` chat provider: one ChatOpenAI client per model, for any OpenAI-compatible server."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from langchain_openai import ChatOpenAI

from ragapp.providers.registry import ModelStatus


def openai_chat_model(name: str) -> ChatOpenAI:
    """A client for model `name` at OPENAI_BASE_URL (OpenAI's API when unset)."""
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


def openai_server_status() -> ModelStatus:
    """Ready when a key or a base URL is set. The server is not asked: health needs no network."""
    if settings.OPENAI_API_KEY or settings.OPENAI_BASE_URL:
        return ModelStatus(ready=True)
    return ModelStatus(
        ready=False,
        detail="Set OPENAI_API_KEY (or OPENAI_BASE_URL for a server that needs no key).",
    )


def openai_chat_status(name: str) -> ModelStatus:
    """Every model name is as ready as the server: which models it serves is its own business."""
    return openai_server_status()
