"""Vector search: what a chunk's vector embeds, the HNSW index on the vectors, and the search.

The index is built for the dimension of the embedding model in use.

The `embedding` column has no fixed dimension, so the index is an expression index on a cast to
`halfvec(N)` (16-bit floats: half the index of `vector(N)`, with the same recall measured in
bench/retrieval.py); queries must use the very same cast (`cosine_distance_to`) for PostgreSQL
to use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Func
from django.db.models.functions import Cast
from pgvector.django import CosineDistance, HalfVectorField, VectorField

from ragapp.models import Chunk
from ragapp.providers import EmbeddingProvider
from ragapp.selectors import embedding_index_check

INDEX_NAME = "chunk_embedding_hnsw"
# bench/retrieval.py is where these get tuned. m is pgvector's default. ef_construction is twice
# its default: at 1M synthetic chunks graphs built with 128 found 0.963-1.000 of the true top 10
# at ef_search 200 (three builds), the default's 0.81-0.94, for about 1.5 times the build time
# (migration 0011, docs/performance.md).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 128
# What the index stores: "halfvec" (the default since issue 19) or "vector" (float32, as before;
# bench/retrieval.py switches to it to measure the old index in the same run).
INDEX_TYPE = "halfvec"
# RAG_HNSW_EF_SEARCH is the ef_search of a table of this many chunks; a larger table gets it
# times (its size over this one) to the power EF_SEARCH_GROWTH, since HNSW needs a longer
# candidate list to keep its recall as the graph grows: 200 at 1M chunks, where a graph built
# with ef_construction 128 found 0.997 of the true top 10 with 160, 200 and 320 alike (and 0.963
# with 100); the square root (316) cost 4 ms more for nothing (docs/performance.md).
EF_SEARCH_REFERENCE_CHUNKS = 100_000
EF_SEARCH_GROWTH = 0.3
# ef_search is also at least this many times the rows a search asks for. A hybrid search asks
# for 80 candidates; with ef_search 100 the index found 0.92 of the exact top 80 at 100k
# synthetic chunks, with 200 0.98 (and the fused top 10 agreed 0.924 and 0.986 with fusion over
# the exact top 80), for 0.4 ms more (docs/performance.md, "Issue 19").
EF_SEARCH_PER_ROW = 2.5
# A search capped per document reads at most this many rows to find enough documents.
CAPPED_SCAN_ROWS = 2000


def embedding_text(*, heading_path: str, text: str) -> str:
    """The embedder's input for a chunk: its heading path, then its text.

    The heading path carries the document title and section names, which are often the words a
    question uses while the chunk body only implies them.
    """
    return f"{heading_path}\n\n{text}" if heading_path else text


def cosine_distance_to(query_vector: list[float], *, dimensions: int) -> Func:
    """The ORM expression ordering chunks by cosine distance, in the form the index matches."""
    field = HalfVectorField if INDEX_TYPE == "halfvec" else VectorField
    return CosineDistance(Cast("embedding", field(dimensions=dimensions)), query_vector)


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
            f"((embedding::{INDEX_TYPE}({int(dimensions)})) {INDEX_TYPE}_cosine_ops) "
            f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
        )


def set_ef_search(ef_search: int) -> None:
    """Set hnsw.ef_search for the current transaction (the recall/speed knob of a query)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(int(ef_search))])


def set_search_settings(*, k: int) -> None:
    """For this transaction: ef_search for the table's size and `k`, and iterative scans.

    ef_search is `max(RAG_HNSW_EF_SEARCH * (chunks / EF_SEARCH_REFERENCE_CHUNKS) **
    EF_SEARCH_GROWTH, EF_SEARCH_PER_ROW * k)`, from PostgreSQL's estimate of the table's size
    (a catalog read, no scan): a graph search that keeps barely more candidates than it returns
    misses many of them. With iterative scans (`RAG_HNSW_ITERATIVE_SCAN`, pgvector 0.8) a
    search that wants more rows than one pass finds, such as one capped per document, carries on
    through the graph instead of ending with fewer rows.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT set_config('hnsw.ef_search', greatest(
                       ceil(%(k)s * %(per_row)s),
                       ceil(%(ef)s * power(greatest(1.0, c.reltuples / %(reference)s), %(growth)s))
                   )::int::text, true),
                   set_config('hnsw.iterative_scan', %(iterative)s, true)
            FROM pg_class c WHERE c.oid = %(table)s::regclass
            """,
            {
                "k": int(k),
                "per_row": EF_SEARCH_PER_ROW,
                "ef": settings.RAG_HNSW_EF_SEARCH,
                "reference": EF_SEARCH_REFERENCE_CHUNKS,
                "growth": EF_SEARCH_GROWTH,
                "iterative": settings.RAG_HNSW_ITERATIVE_SCAN,
                "table": Chunk._meta.db_table,
            },
        )


@dataclass(frozen=True)
class ScoredChunk:
    """A retrieved chunk with its cosine similarity to the query (1 = same direction)."""

    chunk: Chunk
    similarity: float


@dataclass(frozen=True)
class Nearest:
    """A candidate of a search before its chunk is read: the id, its document, the distance."""

    id: int
    document_id: int
    distance: float


def nearest_chunks(
    vector: list[float], *, dimensions: int, k: int, min_documents: int = 0
) -> list[Nearest]:
    """The `k` chunks nearest to `vector`, as ids and distances, nearest first.

    Only the id, document id and distance come back: a search ranks many more candidates than
    it returns (fusion and the cap per document look 8 times deeper), and reading each one's
    text, metadata and document into the ORM cost more than the index scan itself
    (docs/performance.md, "Issue 19"). Callers read the chunks they keep with `load_chunks`.

    The caller holds the snapshot and has applied `set_search_settings`. With `min_documents`,
    it reads on past `k` until the rows come from that many documents (or CAPPED_SCAN_ROWS
    were read), so a cap per document keeps enough candidates when one document's chunks crowd
    the top.
    """
    nearest = (
        Chunk.objects.annotate(distance=cosine_distance_to(vector, dimensions=dimensions))
        .order_by("distance")
        .values_list("id", "document_id", "distance")
    )
    if min_documents <= 1:
        rows = list(nearest[:k])
    else:
        rows, documents = [], set()
        # A server-side cursor: PostgreSQL walks the graph only as far as the rows fetched.
        for row in nearest[:CAPPED_SCAN_ROWS].iterator(chunk_size=k):
            rows.append(row)
            documents.add(row[1])
            if len(rows) >= k and len(documents) >= min_documents:
                break
    # An iterative scan in relaxed order returns rows nearly, not exactly, by distance.
    rows.sort(key=lambda row: (row[2], row[0]))
    return [Nearest(id=i, document_id=d, distance=float(distance)) for i, d, distance in rows]


def load_chunks(
    ids: list[int], *, vector: list[float] | None = None, dimensions: int = 0
) -> dict[int, Chunk]:
    """The chunks of `ids` with their documents, in one query, by id.

    With `vector`, each chunk also carries its cosine `distance` to it (the index's expression,
    so a chunk reports the same similarity however it was found).
    """
    chunks = Chunk.objects.select_related("document").defer("embedding", "search_vector")
    if vector is not None:
        chunks = chunks.annotate(distance=cosine_distance_to(vector, dimensions=dimensions))
    return {chunk.id: chunk for chunk in chunks.filter(id__in=ids)}


def chunk_vector_search(
    *,
    query: str,
    embeddings: EmbeddingProvider,
    k: int,
    vector: list[float] | None = None,
    min_documents: int = 0,
) -> list[ScoredChunk]:
    """The `k` chunks nearest to `query` (or to its `vector`, if given) through the HNSW index.

    With `min_documents`, it reads on past `k` until the rows come from that many documents
    (see `nearest_chunks`).
    """
    if vector is None:
        vector = embeddings.embed_query(query)  # before the transaction: it may be slow
    # The model check and the search in one snapshot: a re-embed that commits in between cannot
    # pair this query's vector with another model's vectors.
    with one_snapshot():
        embedding_index_check(embeddings=embeddings)
        set_search_settings(k=k)
        hits = nearest_chunks(
            vector, dimensions=embeddings.dimensions, k=k, min_documents=min_documents
        )
        chunks = load_chunks([hit.id for hit in hits])
    return [
        ScoredChunk(chunk=chunks[hit.id], similarity=1.0 - hit.distance)
        for hit in hits
        if hit.id in chunks
    ]


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
