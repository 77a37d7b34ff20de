"""Embeddings from any OpenAI-compatible server, through langchain-openai."""

from __future__ import annotations

from functools import cached_property

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from langchain_openai import OpenAIEmbeddings

from ragapp.providers.embeddings import EmbeddingProvider
from ragapp.providers.openai_chat import openai_server_status
from ragapp.providers.registry import EmbeddingStatus

KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
# The openai client retries 429 and 5xx itself, with exponential backoff that honours
# Retry-After; this bounds how many times.
MAX_RETRIES = 6
TIMEOUT_SECONDS = 60.0


class OpenAICompatibleEmbeddings(EmbeddingProvider):
    """`OpenAIEmbeddings`, built lazily, batched, with bounded retries and backoff."""

    provider = "openai"

    def __init__(self, *, model: str, api_key: str, base_url: str | None, batch_size: int):
        self.model_name = model
        self._api_key = api_key
        self._base_url = base_url
        self._batch_size = batch_size

    @cached_property
    def _client(self):
        if not self._api_key and not self._base_url:
            raise ImproperlyConfigured(
                "RAG_EMBEDDING_PROVIDER=openai needs OPENAI_API_KEY (or OPENAI_BASE_URL for a "
                "server that needs no key)."
            )
        return OpenAIEmbeddings(
            model=self.model_name,
            api_key=self._api_key or "unused",
            base_url=self._base_url,
            chunk_size=self._batch_size,
            max_retries=MAX_RETRIES,
            timeout=TIMEOUT_SECONDS,
            # Token-length checks need tiktoken's vocabulary, which it downloads: never at run time.
            check_embedding_ctx_length=False,
        )

    @cached_property
    def dimensions(self) -> int:
        if self.model_name in KNOWN_DIMENSIONS:
            return KNOWN_DIMENSIONS[self.model_name]
        return len(self.embed_query("dimension probe"))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed a batch of texts (sent in requests of `batch_size`)."""
        return self._client.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self._client.embed_query(text)


def build_openai_embeddings() -> OpenAICompatibleEmbeddings:
    """The `openai` embeddings as settings configure them."""
    return OpenAICompatibleEmbeddings(
        model=settings.RAG_OPENAI_EMBEDDING_MODEL,
        api_key=settings.OPENAI_API_KEY,
        base_url=settings.OPENAI_BASE_URL,
        batch_size=settings.RAG_EMBEDDING_BATCH_SIZE,
    )


def openai_embeddings_status() -> EmbeddingStatus:
    """Ready when the server is configured; the server is not asked."""
    server = openai_server_status()
    return EmbeddingStatus(
        model=f"openai/{settings.RAG_OPENAI_EMBEDDING_MODEL}",
        ready=server.ready,
        detail=server.detail,
    )
