"""The embeddings provider interface and its factory (`RAG_EMBEDDING_PROVIDER`)."""

from __future__ import annotations

import threading
from abc import abstractmethod

from django.conf import settings
from django.utils.module_loading import import_string
from langchain_core.embeddings import Embeddings

from ragapp.providers.registry import get_provider


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
    """The configured embedding model, built once per process, its query vectors cached."""
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
    from ragapp.providers.query_cache import QueryCachingEmbeddings  # it subclasses the base here

    build = get_provider(name, setting="RAG_EMBEDDING_PROVIDER").embeddings.build
    # The one place query vectors get their cache: every search goes through this provider.
    return QueryCachingEmbeddings(import_string(build)())
