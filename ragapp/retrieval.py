"""Retrievers for the graph: dense vector search, or vector fused with full-text search."""

from __future__ import annotations

import re

from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db.models import F

from ragapp.graph.state import RetrievedDoc
from ragapp.models import Chunk
from ragapp.providers import EmbeddingProvider
from ragapp.selectors import ScoredChunk, chunk_vector_search

_WORD = re.compile(r"[a-z0-9][a-z0-9_.-]*")
# Reciprocal rank fusion: score = sum over rankings of weight / (RRF_K + rank).
RRF_K = 60
# Each ranking looks this many times deeper than top-k, so fusion has candidates to reorder.
CANDIDATE_FACTOR = 4


def _as_doc(chunk: Chunk, similarity: float) -> RetrievedDoc:
    return RetrievedDoc(
        chunk_id=chunk.id,
        document_id=chunk.document_id,
        title=chunk.document.title,
        source_path=chunk.document.source_path,
        heading_path=chunk.heading_path,
        text=chunk.text,
        similarity=similarity,
        has_code=chunk.has_code,
    )


class VectorRetriever:
    """pgvector HNSW, cosine similarity."""

    mode = "vector"

    def __init__(self, embeddings: EmbeddingProvider):
        self.embeddings = embeddings

    def search(self, query: str, *, k: int) -> list[RetrievedDoc]:
        """The k nearest chunks."""
        return [
            _as_doc(hit.chunk, hit.similarity)
            for hit in chunk_vector_search(query=query, embeddings=self.embeddings, k=k)
        ]


class HybridRetriever:
    """Vector search fused with PostgreSQL full-text search by weighted reciprocal rank fusion."""

    mode = "hybrid"

    def __init__(self, embeddings: EmbeddingProvider, *, text_weight: float = 0.5):
        self.embeddings = embeddings
        self.text_weight = text_weight

    def search(self, query: str, *, k: int) -> list[RetrievedDoc]:
        """The k best chunks by fused rank; similarity is still the cosine similarity."""
        depth = k * CANDIDATE_FACTOR
        dense = chunk_vector_search(query=query, embeddings=self.embeddings, k=depth)
        lexical = self._text_search(query, depth)
        scores: dict[int, float] = {}
        by_id: dict[int, ScoredChunk] = {hit.chunk.id: hit for hit in dense}
        for rank, hit in enumerate(dense, 1):
            scores[hit.chunk.id] = scores.get(hit.chunk.id, 0.0) + 1.0 / (RRF_K + rank)
        for rank, chunk in enumerate(lexical, 1):
            scores[chunk.id] = scores.get(chunk.id, 0.0) + self.text_weight / (RRF_K + rank)
            by_id.setdefault(chunk.id, ScoredChunk(chunk=chunk, similarity=0.0))
        best = sorted(scores, key=lambda chunk_id: -scores[chunk_id])[:k]
        return [_as_doc(by_id[i].chunk, by_id[i].similarity) for i in best]

    def _text_search(self, query: str, limit: int) -> list[Chunk]:
        # Any term may match (OR): a question's words rarely all appear in one chunk. Ranking
        # still prefers chunks that match more of them, and the heading weight A over text B.
        words = _WORD.findall(query.lower())
        if not words:
            return []
        search = SearchQuery(" or ".join(words), search_type="websearch", config="english")
        return list(
            Chunk.objects.select_related("document")
            .defer("embedding", "search_vector")
            .filter(search_vector=search)
            .annotate(rank=SearchRank(F("search_vector"), search))
            .order_by("-rank", "id")[:limit]
        )


def build_retriever(*, mode: str, embeddings: EmbeddingProvider):
    """The retriever for `RAG_RETRIEVAL_MODE`."""
    if mode == "hybrid":
        return HybridRetriever(embeddings)
    return VectorRetriever(embeddings)
