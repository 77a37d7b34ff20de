"""The embeddings provider interface and its factory (`RAG_EMBEDDING_PROVIDER`)."""

from __future__ import annotations

import threading
from abc import abstractmethod

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from langchain_core.embeddings import Embeddings


class EmbeddingProvider(Embeddings):
    """LangChain `Embeddings` plus the identity the index records: provider, model, dimensions."""

    provider: str
    model_name: str

    @property
    @abstractmethod
    def dimensions(self) -> int:
        """Length of every vector this model returns."""

    @property
    def model_id(self) -> str:
        """`provider/model`, as shown to users and stored with the index."""
        return f"{self.provider}/{self.model_name}"


_cache: dict[str, EmbeddingProvider] = {}
_cache_lock = threading.Lock()


def get_embeddings() -> EmbeddingProvider:
    """The configured embedding model, built once per process."""
    name = settings.RAG_EMBEDDING_PROVIDER
    with _cache_lock:
        if name not in _cache:
            _cache[name] = _build(name)
        return _cache[name]


def clear_embeddings_cache() -> None:
    """Forget built models (tests switch providers)."""
    with _cache_lock:
        _cache.clear()


def _build(name: str) -> EmbeddingProvider:
    if name == "local":
        from ragapp.providers.local_embeddings import LocalOnnxEmbeddings

        return LocalOnnxEmbeddings(
            batch_size=settings.RAG_EMBEDDING_BATCH_SIZE, threads=settings.RAG_EMBEDDING_THREADS
        )
    if name == "openai":
        from ragapp.providers.openai_embeddings import OpenAICompatibleEmbeddings

        return OpenAICompatibleEmbeddings(
            model=settings.RAG_OPENAI_EMBEDDING_MODEL,
            api_key=settings.OPENAI_API_KEY,
            base_url=settings.OPENAI_BASE_URL,
            batch_size=settings.RAG_EMBEDDING_BATCH_SIZE,
        )
    if name == "fake":
        from ragapp.providers.fake_embeddings import FakeEmbeddings

        return FakeEmbeddings()
    raise ImproperlyConfigured(f"Unknown RAG_EMBEDDING_PROVIDER {name!r}")
