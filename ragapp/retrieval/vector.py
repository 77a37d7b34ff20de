"""Vector search: what a chunk's vector embeds, the HNSW index on the vectors, and the search.

The index is built for the dimension of the embedding model in use.

The `embedding` column has no fixed dimension, so the index is an expression index on a cast to
`vector(N)`; queries must use the very same cast (`cosine_distance_to`) for PostgreSQL to use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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


def lock_embedding_index_shared() -> None:
    """Hold off changes to the index model while this transaction writes vectors.

    Writers of vectors share the lock, so ingests run side by side; a re-embed or a model switch
    (the exclusive holders) waits for them, and they wait for it.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock_shared(%s)", [_ADVISORY_LOCK_KEY])


@contextmanager
def embedding_index_locked() -> Iterator[None]:
    """Hold the index lock exclusively across many transactions, for a batched re-embed.

    A session-level lock, so it outlives each batch's commit; it is released on leaving the block
    or, if the process dies, when PostgreSQL closes its connection.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [_ADVISORY_LOCK_KEY])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_ADVISORY_LOCK_KEY])


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
    if vector is None:
        vector = embeddings.embed_query(query)  # before the transaction: it may be slow
    # The model check and the search in one snapshot: a re-embed that commits in between cannot
    # pair this query's vector with another model's vectors.
    with one_snapshot():
        embedding_index_check(embeddings=embeddings)
        set_ef_search(max(settings.RAG_HNSW_EF_SEARCH, k))
        rows = list(
            Chunk.objects.select_related("document")
            .defer("embedding", "search_vector")
            .annotate(distance=cosine_distance_to(vector, dimensions=embeddings.dimensions))
            .order_by("distance")[:k]
        )
    return [ScoredChunk(chunk=row, similarity=1.0 - float(row.distance)) for row in rows]


@contextmanager
def one_snapshot():
    """Every query inside reads the same snapshot of the database.

    Under PostgreSQL's default READ COMMITTED each statement sees what was committed when it
    started, so the vector and the full-text query of one hybrid search could each see another
    version of a document being re-ingested (old and new chunks in one result). A read-only
    REPEATABLE READ transaction gives both queries one snapshot; a read-only transaction never
    fails to serialise. Inside a caller's transaction the isolation is the caller's to choose.
    """
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield
