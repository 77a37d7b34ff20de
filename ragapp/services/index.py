"""Writes: the embedding index of the knowledge base.

Every vector in the chunk table must come from the model the index records, or searches compare
vectors of two models (silently, when their dimensions match). One PostgreSQL advisory lock
(`ragapp/retrieval/vector.py`) keeps it so:

- an ingest stores each document under the lock shared, after checking that the index still
  records the model its vectors came from (`embedding_index_lock_for_vectors`);
- recording a model (`embedding_index_prepare`) holds it exclusively for one short transaction;
- a re-embed holds it exclusively for its whole run, so no ingest stores anything meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.db import connection, transaction
from django.db.models import F
from pgvector import Vector

from ragapp.models import Chunk, EmbeddingIndex
from ragapp.providers import EmbeddingProvider
from ragapp.retrieval.vector import (
    INDEX_NAME,
    create_hnsw_index,
    drop_hnsw_index,
    embedding_index_locked,
    embedding_text,
    lock_embedding_index,
    lock_embedding_index_shared,
)
from ragapp.selectors import EmbeddingMismatchError, embedding_index_check, embedding_index_get

REEMBED_BATCH = 256
# Where a re-embed keeps the new vectors until it swaps them in. A temporary table is private to
# the re-embed's connection and disappears with it, so a crashed run leaves nothing behind.
_NEW_VECTORS = "reembed_new_vectors"


class EmbeddingIndexChangedError(EmbeddingMismatchError):
    """The index switched to another model after an ingest computed its vectors."""


class ReembedIncompleteError(Exception):
    """Chunks appeared during a re-embed without taking the index lock; nothing was switched."""


def embedding_index_prepare(*, embeddings: EmbeddingProvider) -> EmbeddingIndex:
    """Make the index ready for vectors of `embeddings`, refusing to mix two models."""
    with transaction.atomic():
        lock_embedding_index()
        index = embedding_index_check(embeddings=embeddings)
        if index is None:
            index = EmbeddingIndex(provider=embeddings.provider)
        elif _records(index, embeddings):
            _ensure_hnsw_index(index.dimensions)
            return index
        return _switch_index(index, embeddings)


def knowledge_base_changed() -> None:
    """Add one to the knowledge base's version, in the caller's transaction with the change.

    In the same transaction, a run that sees the new content also sees the new version; a run
    created before it records the old version and may see either content, so its answer is never
    reused for a version it did not see (ragapp/runs/reuse.py). A database update, not a
    sequence: a change rolled back leaves the version as it was.
    """
    EmbeddingIndex.objects.update(version=F("version") + 1)


def embedding_index_lock_for_vectors(*, embeddings: EmbeddingProvider) -> None:
    """Inside a transaction about to write vectors of `embeddings`: hold off re-embeds, then check.

    Raise EmbeddingIndexChangedError when the index no longer records this model: a re-embed
    switched it while these vectors were being computed, and writing them would mix two models.
    The check comes after the lock, so no switch can commit between it and the writes.
    """
    lock_embedding_index_shared()
    index = embedding_index_get()
    if index is not None and _records(index, embeddings):
        return
    recorded = f"{index.model} ({index.dimensions} dimensions)" if index else "no model"
    raise EmbeddingIndexChangedError(
        f"The knowledge base's embedding model changed to {recorded} while this ingest was "
        f"computing vectors with {embeddings.model_id} ({embeddings.dimensions} dimensions), "
        "probably by `ingest_docs --reembed`. Those vectors were not stored, so the two models "
        "are not mixed; documents stored before the change were re-embedded with the rest. Run "
        "the ingest again with the model the knowledge base now uses."
    )


def embedding_index_reembed(
    *, embeddings: EmbeddingProvider, on_progress: Callable[[int, int], None] | None = None
) -> int:
    """Re-embed every stored chunk with `embeddings` and switch the index to it; return the count.

    Searches run throughout, on the old model's vectors until the switch commits and on the new
    model's after, never on a mix:

    1. Under the exclusive index lock, every chunk is embedded in batches into a temporary table.
       Each batch commits; the chunk table is only read, so searches do not wait. Ingests wait
       to store (`embedding_index_lock_for_vectors`), so no chunk is added meanwhile.
    2. The HNSW index is dropped on its own: its cast to the old dimension would refuse the new
       vectors. Its exclusive lock lasts a moment; searches then scan exactly, on old vectors.
    3. One transaction copies the new vectors into the chunk table, records the new model and
       builds the index. It takes no lock a search needs, and a search sees all of it or none.

    Nothing is switched if embedding fails, which is where a long run usually fails.
    """
    with embedding_index_locked(), _new_vectors_table():
        _embed_every_chunk(embeddings, on_progress)
        return _swap_in_new_vectors(embeddings)


def _records(index: EmbeddingIndex, embeddings: EmbeddingProvider) -> bool:
    return index.model == embeddings.model_id and index.dimensions == embeddings.dimensions


def _ensure_hnsw_index(dimensions: int) -> None:
    """Rebuild the index if a re-embed was killed between dropping and rebuilding it.

    Searches are right without it, only slower: this puts it back at the next ingest.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [INDEX_NAME])
        (exists,) = cursor.fetchone()
    if not exists:
        create_hnsw_index(dimensions)


@contextmanager
def _new_vectors_table() -> Iterator[None]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE {_NEW_VECTORS} "
            "(chunk_id bigint PRIMARY KEY, embedding vector NOT NULL)"
        )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {_NEW_VECTORS}")


def _embed_every_chunk(
    embeddings: EmbeddingProvider, on_progress: Callable[[int, int], None] | None
) -> None:
    total = Chunk.objects.count()
    done, after_id = 0, 0
    # Paged by id rather than from a list taken up front: memory stays flat, and a chunk added
    # meanwhile (by a writer that skipped the lock) is still reached if its id is higher.
    while batch := _chunks_after(after_id):
        texts = [embedding_text(heading_path=heading, text=text) for _, heading, text in batch]
        vectors = embeddings.embed_documents(texts)
        _save_new_vectors([chunk_id for chunk_id, _, _ in batch], vectors)
        after_id = batch[-1][0]
        done += len(batch)
        if on_progress:
            on_progress(done, total)


def _chunks_after(after_id: int) -> list[tuple[int, str, str]]:
    return list(
        Chunk.objects.filter(id__gt=after_id)
        .order_by("id")
        .values_list("id", "heading_path", "text")[:REEMBED_BATCH]
    )


def _save_new_vectors(chunk_ids: list[int], vectors: list[list[float]]) -> None:
    rows = [
        (chunk_id, Vector(vector).to_text())
        for chunk_id, vector in zip(chunk_ids, vectors, strict=True)
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {_NEW_VECTORS} (chunk_id, embedding) VALUES (%s, %s::vector)", rows
        )


def _swap_in_new_vectors(embeddings: EmbeddingProvider) -> int:
    previous = EmbeddingIndex.objects.first()
    # Dropped in its own statement: inside the swap, its exclusive lock would make every search
    # wait until the commit.
    drop_hnsw_index()
    try:
        with transaction.atomic():
            count = _copy_new_vectors()
            _refuse_chunks_without_new_vectors()
            _switch_index(previous or EmbeddingIndex(), embeddings)
    except Exception:
        if previous is not None:
            create_hnsw_index(previous.dimensions)  # give searches back the index they had
        raise
    return count


def _copy_new_vectors() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Chunk._meta.db_table} AS chunk SET embedding = new.embedding "
            f"FROM {_NEW_VECTORS} AS new WHERE chunk.id = new.chunk_id"
        )
        return cursor.rowcount


def _refuse_chunks_without_new_vectors() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {Chunk._meta.db_table} AS chunk WHERE NOT EXISTS "
            f"(SELECT 1 FROM {_NEW_VECTORS} AS new WHERE new.chunk_id = chunk.id)"
        )
        (missing,) = cursor.fetchone()
    if missing:
        raise ReembedIncompleteError(
            f"{missing} chunk(s) were stored during the re-embed by a writer that did not take "
            "the embedding-index lock, so they have no vector from the new model; nothing was "
            "switched. Run `ingest_docs --reembed` again."
        )


def _switch_index(index: EmbeddingIndex, embeddings: EmbeddingProvider) -> EmbeddingIndex:
    index.provider = embeddings.provider
    index.model = embeddings.model_id
    index.dimensions = embeddings.dimensions
    # Never `version` from a stale copy: a prune or a move of published URLs takes no index lock.
    index.save(update_fields=None if index.pk is None else _MODEL_FIELDS)
    knowledge_base_changed()  # every stored vector is another model's now
    index.refresh_from_db(fields=["version"])
    create_hnsw_index(embeddings.dimensions)
    return index


_MODEL_FIELDS = ["provider", "model", "dimensions", "updated_at"]
