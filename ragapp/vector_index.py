"""The HNSW index on chunk embeddings, built for the dimension of the embedding model in use.

The `embedding` column has no fixed dimension, so the index is an expression index on a cast to
`vector(N)`; queries must use the very same cast (`cosine_distance_to`) for PostgreSQL to use it.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import Func
from django.db.models.functions import Cast
from pgvector.django import CosineDistance, VectorField

INDEX_NAME = "chunk_embedding_hnsw"
# pgvector's defaults; bench/retrieval.py is where they get tuned.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64


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
