"""Writes: the embedding index of the knowledge base."""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

from ragapp.models import Chunk, EmbeddingIndex
from ragapp.providers import EmbeddingProvider
from ragapp.retrieval.vector import (
    create_hnsw_index,
    drop_hnsw_index,
    embedding_text,
    lock_embedding_index,
)
from ragapp.selectors import embedding_index_check

REEMBED_BATCH = 256


def embedding_index_prepare(*, embeddings: EmbeddingProvider) -> EmbeddingIndex:
    """Make the index ready for vectors of `embeddings`, refusing to mix two models."""
    with transaction.atomic():
        lock_embedding_index()
        index = embedding_index_check(embeddings=embeddings)
        if index is None:
            index = EmbeddingIndex(provider=embeddings.provider)
        elif index.model == embeddings.model_id and index.dimensions == embeddings.dimensions:
            return index
        return _switch_index(index, embeddings)


def embedding_index_reembed(
    *, embeddings: EmbeddingProvider, on_progress: Callable[[int, int], None] | None = None
) -> int:
    """Re-embed every stored chunk with `embeddings` and rebuild the index; return the count.

    It runs in one transaction, so it is all or nothing. The old index is dropped first (its
    dimension may not fit the new vectors), which makes searches wait until it commits; they
    could not have used the old vectors with the new model anyway.
    """
    with transaction.atomic():
        lock_embedding_index()
        drop_hnsw_index()
        total = Chunk.objects.count()
        index = EmbeddingIndex.objects.first() or EmbeddingIndex()
        done = 0
        ids = list(Chunk.objects.order_by("id").values_list("id", flat=True))
        for start in range(0, len(ids), REEMBED_BATCH):
            batch = list(
                Chunk.objects.filter(id__in=ids[start : start + REEMBED_BATCH]).only(
                    "id", "heading_path", "text"
                )
            )
            vectors = embeddings.embed_documents(
                [embedding_text(heading_path=c.heading_path, text=c.text) for c in batch]
            )
            for chunk, vector in zip(batch, vectors, strict=True):
                chunk.embedding = vector
            Chunk.objects.bulk_update(batch, ["embedding"])
            done += len(batch)
            if on_progress:
                on_progress(done, total)
        _switch_index(index, embeddings)
    return done


def _switch_index(index: EmbeddingIndex, embeddings: EmbeddingProvider) -> EmbeddingIndex:
    index.provider = embeddings.provider
    index.model = embeddings.model_id
    index.dimensions = embeddings.dimensions
    index.save()
    create_hnsw_index(embeddings.dimensions)
    return index
