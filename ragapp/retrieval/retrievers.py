"""Retrievers for the graph: dense vector search, or vector fused with full-text search.

Both rank candidates by id first (the vector and BM25 queries return ids, document ids and
scores only), fuse and cap them per document, and then read the chunks they return, k of them,
in one query: reading every candidate's text and document cost more than ranking them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from django.conf import settings
from django.db.models import Q
from pgvector.django import CosineDistance

from ragapp.graph.state import RetrievedDoc
from ragapp.models import Chunk
from ragapp.providers import EmbeddingProvider
from ragapp.retrieval.coverage import never_mentioned
from ragapp.retrieval.text_search import bm25_chunks
from ragapp.retrieval.vector import (
    load_chunks,
    nearest_chunks,
    one_snapshot,
    set_search_settings,
)
from ragapp.selectors import embedding_index_check

# Reciprocal rank fusion: score = sum over rankings of weight / (RRF_K + rank).
RRF_K = 60
# Each ranking looks this many times deeper than top-k, so fusion and the per-document cap have
# candidates to choose from (8 measured better than 4 on both golden sets; docs/evaluation.md).
CANDIDATE_FACTOR = 8


class _InDocument(Protocol):
    @property
    def document_id(self) -> int: ...


def per_document[Ranked: _InDocument](docs: list[Ranked], *, cap: int, k: int) -> list[Ranked]:
    """The best `k`, keeping at most `cap` chunks of any one document (0: no cap).

    Neighbouring chunks of one page tend to crowd the top of a ranking; leaving room for other
    documents raised recall@5 from 0.87 to 0.93 on the PostgreSQL golden set.
    """
    if not cap:
        return docs[:k]
    kept, count = [], {}
    for doc in docs:
        if count.get(doc.document_id, 0) < cap:
            kept.append(doc)
            count[doc.document_id] = count.get(doc.document_id, 0) + 1
            if len(kept) == k:
                break
    return kept


def companions_of[Ranked: _InDocument](
    ranked: list[Ranked], kept: list[Ranked], *, n: int
) -> dict[int, list[Ranked]]:
    """For each of `kept` (by position), the next `n` chunks of its document in `ranked`.

    The page a question is about is found more often than its chunk that holds the answer: on
    the tuning sets every expected fact was in the five chunks for 0.73 of the questions, and in
    their documents' next-best chunks too for 0.82-0.83 (docs/evaluation.md, "Companions: what
    the model reads").
    """
    if not n:
        return {}
    taken = {id(doc) for doc in kept}
    by_document: dict[int, list[Ranked]] = {}
    for doc in ranked:
        if id(doc) not in taken:
            by_document.setdefault(doc.document_id, []).append(doc)
    return {
        position: by_document[doc.document_id][:n]
        for position, doc in enumerate(kept)
        if doc.document_id in by_document
    }


@dataclass(slots=True)
class _Candidate:
    """A fused candidate: its ids, and its cosine distance when the dense ranking found it."""

    id: int
    document_id: int
    distance: float | None


def _as_doc(chunk: Chunk, similarity: float, companions: tuple[str, ...] = ()) -> RetrievedDoc:
    return RetrievedDoc(
        chunk_id=chunk.id,
        document_id=chunk.document_id,
        title=chunk.document.title,
        source_path=chunk.document.source_path,
        heading_path=chunk.heading_path,
        text=chunk.text,
        similarity=similarity,
        has_code=chunk.has_code,
        public_path=chunk.document.public_path,
        url=chunk.public_url,
        companions=companions,
    )


# A page is searched for an answer's terms at most this many chunks deep (a long manual page
# has a few hundred; the lookup must stay a cheap query).
MENTIONING_LIMIT = 200


def chunks_mentioning(
    document_ids: list[int], terms: list[str], *, exclude: list[int]
) -> list[RetrievedDoc]:
    """The chunks of `document_ids` (but not those of `exclude`) whose text holds any of `terms`.

    Case-insensitive substring matches, in page order; the caller decides what a whole-token
    match is (`grounding.supporting`). Similarity is 0: no search found them.
    """
    if not document_ids or not terms:
        return []
    mentions = Q()
    for term in terms:
        mentions |= Q(text__icontains=term)
    chunks = (
        Chunk.objects.select_related("document")
        .defer("embedding", "search_vector")
        .filter(mentions, document_id__in=document_ids)
        .exclude(id__in=exclude)
        .order_by("document_id", "ordinal")[:MENTIONING_LIMIT]
    )
    return [_as_doc(chunk, 0.0) for chunk in chunks]


def nearest_in_documents(
    embeddings: EmbeddingProvider,
    query: str,
    document_ids: list[int],
    *,
    exclude: list[int],
    k: int,
) -> list[RetrievedDoc]:
    """The `k` chunks of `document_ids` (but not those of `exclude`) nearest to `query`.

    An exact scan of those pages' chunks (a page has a few hundred at most), not the index:
    the graph's second read of the pages a search found (`nodes.read_on`).
    """
    if not document_ids or k <= 0:
        return []
    vector = embeddings.embed_query(query)  # before the transaction: it may be slow
    with one_snapshot():
        embedding_index_check(embeddings=embeddings)
        chunks = (
            Chunk.objects.select_related("document")
            .defer("embedding", "search_vector")
            .filter(document_id__in=document_ids)
            .exclude(id__in=exclude)
            .annotate(distance=CosineDistance("embedding", vector))
            .order_by("distance", "id")[:k]
        )
        return [_as_doc(chunk, 1.0 - float(chunk.distance)) for chunk in chunks]


def _companion_texts(extra: list, chunks: dict[int, Chunk]) -> tuple[str, ...]:
    return tuple(chunks[c.id].text for c in extra if c.id in chunks)


class VectorRetriever:
    """pgvector HNSW, cosine similarity."""

    mode = "vector"
    mentioning = staticmethod(chunks_mentioning)
    never_mentioned = staticmethod(never_mentioned)

    def __init__(self, embeddings: EmbeddingProvider, *, per_document_cap: int = 0):
        self.embeddings = embeddings
        self.per_document_cap = per_document_cap

    def nearest_in(
        self, query: str, document_ids: list[int], *, exclude: list[int], k: int
    ) -> list[RetrievedDoc]:
        """The `k` chunks of `document_ids`, less `exclude`, nearest to `query` (exactly)."""
        return nearest_in_documents(self.embeddings, query, document_ids, exclude=exclude, k=k)

    def search(
        self, query: str, *, k: int, depth: int | None = None, companions: int = 0
    ) -> list[RetrievedDoc]:
        """The k nearest chunks (at most `per_document_cap` from one document).

        `depth` is how many candidates to rank first (default: `k * CANDIDATE_FACTOR` with a
        cap); the evaluation passes the graph's own depth so it measures the same ranking.
        Each hit carries the text of up to `companions` more chunks of its document, the next
        in the ranking (`RetrievedDoc.companions`).
        """
        if depth is None:
            depth = k * CANDIDATE_FACTOR if self.per_document_cap else k
        depth = max(depth, k)
        vector = self.embeddings.embed_query(query)  # before the transaction: it may be slow
        # The model check, the ranking and the chunks' read in one snapshot (one_snapshot).
        with one_snapshot():
            embedding_index_check(embeddings=self.embeddings)
            set_search_settings(k=depth)
            hits = nearest_chunks(
                vector,
                dimensions=self.embeddings.dimensions,
                k=depth,
                min_documents=k if self.per_document_cap else 0,
            )
            kept = per_document(hits, cap=self.per_document_cap, k=k)
            extra = companions_of(hits, kept, n=companions)
            ids = [hit.id for hit in kept] + [c.id for more in extra.values() for c in more]
            chunks = load_chunks(ids)
        return [
            _as_doc(chunks[h.id], 1.0 - h.distance, _companion_texts(extra.get(n, []), chunks))
            for n, h in enumerate(kept)
            if h.id in chunks
        ]


class HybridRetriever:
    """Vector search fused with PostgreSQL full-text search by weighted reciprocal rank fusion."""

    mode = "hybrid"
    mentioning = staticmethod(chunks_mentioning)
    never_mentioned = staticmethod(never_mentioned)

    def __init__(
        self, embeddings: EmbeddingProvider, *, text_weight: float = 0.35, per_document_cap: int = 0
    ):
        self.embeddings = embeddings
        self.text_weight = text_weight
        self.per_document_cap = per_document_cap

    def nearest_in(
        self, query: str, document_ids: list[int], *, exclude: list[int], k: int
    ) -> list[RetrievedDoc]:
        """As `VectorRetriever.nearest_in`: by cosine alone, within a few pages."""
        return nearest_in_documents(self.embeddings, query, document_ids, exclude=exclude, k=k)

    def search(
        self, query: str, *, k: int, depth: int | None = None, companions: int = 0
    ) -> list[RetrievedDoc]:
        """The k best chunks by fused rank; similarity is still the cosine similarity.

        Each hit carries up to `companions` more chunks of its document (as `VectorRetriever`).
        """
        depth = max(depth or k * CANDIDATE_FACTOR, k)
        vector = self.embeddings.embed_query(query)  # before the transaction: it may be slow
        dimensions = self.embeddings.dimensions
        # One snapshot for both rankings and the read (one_snapshot: a re-ingest in between
        # could otherwise mix a document's old and new chunks).
        with one_snapshot():
            embedding_index_check(embeddings=self.embeddings)
            set_search_settings(k=depth)
            dense = nearest_chunks(
                vector,
                dimensions=dimensions,
                k=depth,
                min_documents=k if self.per_document_cap else 0,
            )
            lexical = self._text_ranking(query, depth)
            scores: dict[int, float] = {}
            candidates: dict[int, _Candidate] = {}
            for rank, hit in enumerate(dense, 1):
                scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (RRF_K + rank)
                candidates.setdefault(hit.id, _Candidate(hit.id, hit.document_id, hit.distance))
            for rank, (chunk_id, document_id) in enumerate(lexical, 1):
                scores[chunk_id] = scores.get(chunk_id, 0.0) + self.text_weight / (RRF_K + rank)
                candidates.setdefault(chunk_id, _Candidate(chunk_id, document_id, None))
            # sorted() is stable: equal scores keep the dense ranking's order, then BM25's.
            ranked = [candidates[i] for i in sorted(scores, key=lambda i: -scores[i])]
            kept = per_document(ranked, cap=self.per_document_cap, k=k)
            extra = companions_of(ranked, kept, n=companions)
            # Only a chunk that BM25 alone found needs its cosine distance computed; the read
            # computes it for the k kept (the index's expression, so both ways agree).
            chunks = load_chunks(
                [c.id for c in kept] + [c.id for more in extra.values() for c in more],
                vector=vector if any(c.distance is None for c in kept) else None,
                dimensions=dimensions,
            )
        return [
            _as_doc(
                chunks[c.id],
                1.0 - (c.distance if c.distance is not None else float(chunks[c.id].distance)),
                _companion_texts(extra.get(n, []), chunks),
            )
            for n, c in enumerate(kept)
            if c.id in chunks
        ]

    def _text_ranking(self, query: str, limit: int) -> list[tuple[int, int]]:
        # BM25, not ts_rank: ts_rank has no notion of how rare a word is (text_search.py).
        return bm25_chunks(query, limit=limit)


def build_retriever(*, mode: str, embeddings: EmbeddingProvider):
    """The retriever for `RAG_RETRIEVAL_MODE`, with the fusion weight and cap from settings."""
    cap = settings.RAG_MAX_CHUNKS_PER_DOCUMENT
    if mode == "hybrid":
        return HybridRetriever(
            embeddings, text_weight=settings.RAG_HYBRID_TEXT_WEIGHT, per_document_cap=cap
        )
    return VectorRetriever(embeddings, per_document_cap=cap)
