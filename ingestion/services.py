"""Ingest paths into the knowledge base: load, chunk, embed, and replace documents atomically."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction

from ingestion.chunking import ChunkDraft, chunk_document
from ingestion.discovery import discover
from ingestion.loaders import EmptyDocumentError, LoadError, load_document
from ingestion.report import FileResult, IngestReport, Outcome
from ragapp.models import Chunk, Document
from ragapp.providers import EmbeddingProvider
from ragapp.retrieval.vector import embedding_text
from ragapp.selectors import embedding_index_check
from ragapp.services.index import embedding_index_lock_for_vectors, embedding_index_prepare

logger = logging.getLogger(__name__)

# Chunks gathered across files before one embedding call: a large pool lets the embedder sort by
# length and pad little, while a file's chunks still reach the database within seconds.
EMBED_POOL_CHUNKS = 256


@dataclass
class _Pending:
    """A loaded, chunked file waiting for its embeddings."""

    source_path: str
    title: str
    format: str
    content_hash: str
    size_bytes: int
    metadata: dict
    chunks: list[ChunkDraft]
    outcome: Outcome


@dataclass
class IngestObserver:
    """Callbacks for progress display; every one is optional."""

    on_file: Callable[[FileResult], None] | None = None
    on_embedded: Callable[[int], None] | None = None


def source_path_for(path: Path) -> str:
    """How a file is keyed in the knowledge base: relative to the project when inside it."""
    resolved = path.absolute()
    try:
        return resolved.relative_to(settings.BASE_DIR).as_posix()
    except ValueError:
        return resolved.as_posix()


def ingest_paths(
    *,
    paths: list[Path],
    embeddings: EmbeddingProvider,
    full: bool = False,
    prune: bool = False,
    dry_run: bool = False,
    observer: IngestObserver | None = None,
) -> IngestReport:
    """Bring the knowledge base in line with the files under `paths`.

    Unchanged files (same content hash) are skipped unless `full`; changed files are replaced in
    one transaction each; with `prune`, documents under `paths` whose files are gone are deleted.
    One bad file never stops the others: it is reported and the rest carry on. A re-embed that
    switches the model while this runs stops it with EmbeddingIndexChangedError instead: every
    vector it has left would be of the old model.
    """
    started = time.perf_counter()
    observer = observer or IngestObserver()
    report = IngestReport(dry_run=dry_run)

    def record(result: FileResult) -> None:
        report.results.append(result)
        if observer.on_file:
            observer.on_file(result)

    if dry_run:
        embedding_index_check(embeddings=embeddings)  # a dry run must fail where a real one would
    else:
        embedding_index_prepare(embeddings=embeddings)
    known = dict(Document.objects.values_list("source_path", "content_hash"))
    seen: set[str] = set()
    pool: list[_Pending] = []

    for found in discover(paths):
        key = source_path_for(found.path)
        if found.error:
            record(FileResult(key, Outcome.FAILED, detail=found.error))
            continue
        if found.skip_reason:
            record(FileResult(key, Outcome.SKIPPED, detail=found.skip_reason))
            continue
        seen.add(key)
        pending = _prepare(found.path, key, known, full=full, record=record)
        if pending is None:
            continue
        if dry_run:
            record(FileResult(key, pending.outcome, chunks=len(pending.chunks)))
            continue
        pool.append(pending)
        if sum(len(p.chunks) for p in pool) >= EMBED_POOL_CHUNKS:
            report.chunks_embedded += _flush(pool, embeddings, record, observer)
            pool = []
    if pool:
        report.chunks_embedded += _flush(pool, embeddings, record, observer)
    if prune:
        for key in _prunable(paths, known, seen):
            if not dry_run:
                Document.objects.filter(source_path=key).delete()
            record(FileResult(key, Outcome.PRUNED))
    report.seconds = time.perf_counter() - started
    return report


def _prepare(path: Path, key: str, known: dict[str, str], *, full: bool, record) -> _Pending | None:
    try:
        loaded = load_document(path, max_bytes=settings.RAG_MAX_FILE_BYTES)
    except EmptyDocumentError as exc:
        record(FileResult(key, Outcome.SKIPPED, detail=str(exc)))
        return None
    except LoadError as exc:
        # An existing version of the document stays as it was: nothing is lost.
        record(FileResult(key, Outcome.FAILED, detail=str(exc)))
        return None
    except OSError as exc:
        record(FileResult(key, Outcome.FAILED, detail=f"cannot read: {exc.strerror or exc}"))
        return None
    content_hash = hashlib.sha256(loaded.text.encode("utf-8")).hexdigest()
    if key in known and known[key] == content_hash and not full:
        record(FileResult(key, Outcome.UNCHANGED))
        return None
    chunks = chunk_document(
        loaded.text,
        title=loaded.title,
        chunk_size=settings.RAG_CHUNK_SIZE,
        chunk_overlap=settings.RAG_CHUNK_OVERLAP,
    )
    if not chunks:
        record(FileResult(key, Outcome.SKIPPED, detail="no text to index"))
        return None
    return _Pending(
        source_path=key,
        title=loaded.title[:500],
        format=loaded.format,
        content_hash=content_hash,
        size_bytes=path.stat().st_size,
        metadata={"warnings": list(loaded.warnings)} if loaded.warnings else {},
        chunks=chunks,
        outcome=Outcome.UPDATED if key in known else Outcome.NEW,
    )


def _flush(pool: list[_Pending], embeddings, record, observer: IngestObserver) -> int:
    """Embed the pooled files' chunks in one call, then store each file; return chunks stored."""
    texts = [
        embedding_text(heading_path=c.heading_path, text=c.text) for p in pool for c in p.chunks
    ]
    try:
        vectors = embeddings.embed_documents(texts)
    except Exception as exc:
        if len(pool) > 1:
            # One file's text may be what the model rejects: retry file by file to isolate it.
            logger.warning("embedding a pool of %d files failed; retrying one by one", len(pool))
            return sum(_flush([p], embeddings, record, observer) for p in pool)
        record(FileResult(pool[0].source_path, Outcome.FAILED, detail=f"embedding failed: {exc}"))
        return 0
    if observer.on_embedded:
        observer.on_embedded(len(texts))
    stored, offset = 0, 0
    for pending in pool:
        count = len(pending.chunks)
        stored += _store(pending, vectors[offset : offset + count], embeddings, record)
        offset += count
    return stored


def _store(pending: _Pending, vectors: list[list[float]], embeddings, record) -> int:
    """Replace the document and all its chunks in one transaction: readers see old or new."""
    with transaction.atomic():
        # Embedding took a while with no lock held; a re-embed may have switched models since.
        embedding_index_lock_for_vectors(embeddings=embeddings)
        document, _ = Document.objects.select_for_update().update_or_create(
            source_path=pending.source_path,
            defaults={
                "title": pending.title,
                "format": pending.format,
                "content_hash": pending.content_hash,
                "size_bytes": pending.size_bytes,
                "metadata": pending.metadata,
            },
        )
        document.chunks.all().delete()
        Chunk.objects.bulk_create(
            [
                Chunk(
                    document=document,
                    ordinal=draft.ordinal,
                    text=draft.text,
                    heading_path=draft.heading_path[:1000],
                    has_code=draft.has_code,
                    embedding=vector,
                )
                for draft, vector in zip(pending.chunks, vectors, strict=True)
            ],
            batch_size=500,
        )
    record(FileResult(pending.source_path, pending.outcome, chunks=len(pending.chunks)))
    return len(pending.chunks)


def _prunable(roots: list[Path], known: dict[str, str], seen: set[str]) -> list[str]:
    """Known documents under `roots` that discovery did not find (their files are gone)."""
    # A root that does not exist prunes nothing: a typo must not empty the knowledge base.
    prefixes = [(source_path_for(root), root.is_dir()) for root in roots if root.exists()]
    gone = []
    for key in known:
        if key in seen:
            continue
        for prefix, is_tree in prefixes:
            if key == prefix or (is_tree and key.startswith(prefix.rstrip("/") + "/")):
                gone.append(key)
                break
    return sorted(gone)
