"""A deterministic embedding model for tests: hashed bag of words, no model files, no network."""

from __future__ import annotations

import hashlib
import math
import re

from ragapp.providers.embeddings import EmbeddingProvider
from ragapp.providers.registry import EmbeddingStatus

_WORD = re.compile(r"[a-z0-9]+")


class FakeEmbeddings(EmbeddingProvider):
    """Texts sharing words get similar vectors, so retrieval tests behave like the real thing."""

    provider = "fake"

    def __init__(self, dimensions: int = 64):
        self._dimensions = dimensions
        self.model_name = f"hashed-bow-{dimensions}"
        self.calls: list[int] = []  # batch sizes, so tests can assert what was (not) embedded

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed a batch of texts."""
        self.calls.append(len(texts))
        return [self._embed(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self._embed(text)

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self._dimensions
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            vector[int.from_bytes(digest[:4], "little") % self._dimensions] += 1.0
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0:
            vector[0], norm = 1.0, 1.0  # a text with no words still needs a valid unit vector
        return [v / norm for v in vector]


def fake_embeddings_status() -> EmbeddingStatus:
    """Always ready: nothing to install, load or reach."""
    return EmbeddingStatus(
        model="fake/hashed-bow", ready=True, detail="Deterministic test embeddings."
    )
