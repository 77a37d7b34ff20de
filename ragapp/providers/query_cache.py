"""Query embeddings kept in Django's cache, keyed by model and text: a repeated question is free.

`get_embeddings` wraps every provider in `QueryCachingEmbeddings`, so every search shares it. The
cache is Redis when RAG_REDIS_URL is set (shared by all processes) and per-process local memory
otherwise. A cache that fails (Redis down or unreachable) costs only speed: the model embeds the
query as if nothing were cached, and the cache is left alone for a while rather than asked again
on every question.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time

from django.core.cache import cache

from ragapp.providers.embeddings import EmbeddingProvider

logger = logging.getLogger(__name__)

# A model's vector for a text never changes, so the timeout only bounds the cache's size.
QUERY_EMBEDDING_TTL_S = 7 * 24 * 3600
# After a cache failure, how long queries skip it: one slow attempt (a connect timeout to a host
# that is gone) per pause, not one per question.
CACHE_PAUSE_S = 30.0


class QueryCachingEmbeddings(EmbeddingProvider):
    """An embedding provider whose `embed_query` results are cached; everything else passes through.

    Documents (ingest, re-embed) are not cached: each is embedded once, and they would only crowd
    the queries out of the cache.
    """

    def __init__(self, inner: EmbeddingProvider):
        self.inner = inner
        self.provider = inner.provider
        self.model_name = inner.model_name
        self._paused_until = 0.0
        self._lock = threading.Lock()

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed a batch of texts with the model (never cached)."""
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """The query's vector from the cache, else from the model (and then cached)."""
        key = query_embedding_key(self.model_id, text)
        vector = self._cache_call(cache.get, key)
        if vector is None:
            vector = self.inner.embed_query(text)
            self._cache_call(cache.set, key, vector, QUERY_EMBEDDING_TTL_S)
        return vector

    def __getattr__(self, name: str):
        # Provider-specific extras (the local model's embed_array, the fake's call log).
        if name == "inner":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _cache_call(self, call, *args):
        if time.monotonic() < self._paused_until:
            return None
        try:
            return call(*args)
        except Exception as exc:  # any backend's failure: the cache is an optimisation only
            with self._lock:
                self._paused_until = time.monotonic() + CACHE_PAUSE_S
            logger.warning(
                "the cache failed (%s: %s); embedding queries without it for %.0f s",
                type(exc).__name__,
                exc,
                CACHE_PAUSE_S,
            )
            return None


def query_embedding_key(model_id: str, text: str) -> str:
    """The cache key of `text`'s vector by `model_id`: hashed, so any text makes a valid key."""
    digest = hashlib.sha256(f"{model_id}\n{text}".encode()).hexdigest()
    return f"rag:query-embedding:{digest}"
