"""Vector search: what a chunk's vector embeds, the HNSW index on the vectors, and the search.

The index is built for the dimension of the embedding model in use.

The `embedding` column has no fixed dimension, so the index is an expression index on a cast to
`vector(N)`; queries must use the very same cast (`cosine_distance_to`) for PostgreSQL to use it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Func
from django.db.models.functions import Cast
from pgvector.django import CosineDistance, VectorField

from ragapp.models import Chunk
from ragapp.providers import EmbeddingProvider
from ragapp.selectors import embedding_index_check

INDEX_NAME = "chunk_embedding_hnsw"
# pgvector's defaults; bench/retrieval.py is where they get tuned.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64


def embedding_text(*, heading_path: str, text: str) -> str:
    """The embedder's input for a chunk: its heading path, then its text.

    The heading path carries the document title and section names, which are often the words a
    question uses while the chunk body only implies them.
    """
    return f"{heading_path}\n\n{text}" if heading_path else text


def cosine_distance_to(query_vector: list[float], *, dimensions: int) -> Func:
    """The ORM expression ordering chunks by cosine distance, in the form the index matches."""
    return CosineDistance(Cast("embedding", VectorField(dimensions=dimensions)), query_vector)


# Any constant works; it only has to be the same in every process.
_ADVISORY_LOCK_KEY = 0x5241_4731  # "RAG1"


def lock_embedding_index() -> None:
    """Serialise changes to the index model across processes (until the transaction ends)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_ADVISORY_LOCK_KEY])


def drop_hnsw_index() -> None:
    """Drop the HNSW index if it exists."""
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {INDEX_NAME}")


def create_hnsw_index(dimensions: int) -> None:
    """(Re)create the HNSW cosine index for vectors of `dimensions`."""
    drop_hnsw_index()
    with connection.cursor() as cursor:
        # Django's foreign keys are deferred; PostgreSQL will not build an index on a table
        # with deferred checks still pending in this transaction, so run them now.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(
            f"CREATE INDEX {INDEX_NAME} ON ragapp_chunk USING hnsw "
            f"((embedding::vector({int(dimensions)})) vector_cosine_ops) "
            f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
        )


def set_ef_search(ef_search: int) -> None:
    """Set hnsw.ef_search for the current transaction (the recall/speed knob of a query)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(int(ef_search))])


@dataclass(frozen=True)
class ScoredChunk:
    """A retrieved chunk with its cosine similarity to the query (1 = same direction)."""

    chunk: Chunk
    similarity: float


def chunk_vector_search(
    *, query: str, embeddings: EmbeddingProvider, k: int, vector: list[float] | None = None
) -> list[ScoredChunk]:
    """The `k` chunks nearest to `query` (or to its `vector`, if given) through the HNSW index."""
    embedding_index_check(embeddings=embeddings)
    if vector is None:
        vector = embeddings.embed_query(query)
    with transaction.atomic():
        set_ef_search(max(settings.RAG_HNSW_EF_SEARCH, k))
        rows = list(
            Chunk.objects.select_related("document")
            .defer("embedding", "search_vector")
            .annotate(distance=cosine_distance_to(vector, dimensions=embeddings.dimensions))
            .order_by("distance")[:k]
        )
    return [ScoredChunk(chunk=row, similarity=1.0 - float(row.distance)) for row in rows]
