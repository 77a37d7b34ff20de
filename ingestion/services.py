"""Ingest paths into the knowledge base: load, chunk, embed, and replace documents atomically."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from django.conf import settings
from django.db import transaction

from ingestion.chunking import ChunkDraft, chunk_document
from ingestion.discovery import discover
from ingestion.loaders import EmptyDocumentError, LoadedDocument, LoadError, load_document
from ingestion.publishing import Root, heading_anchor, own_url, page_url, roots_for
from ingestion.report import FileResult, IngestReport, Outcome
from ragapp.models import Chunk, Document
from ragapp.observability.metrics import record_ingest
from ragapp.providers import EmbeddingProvider
from ragapp.retrieval.text_search import bm25_refresh
from ragapp.retrieval.vector import embedding_text
from ragapp.selectors import embedding_index_check
from ragapp.services.index import (
    embedding_index_lock_for_vectors,
    embedding_index_prepare,
    knowledge_base_changed,
)

logger = logging.getLogger(__name__)

# Chunks gathered across files before one embedding call: a large pool lets the embedder sort by
# length and pad little, while a file's chunks still reach the database within seconds.
EMBED_POOL_CHUNKS = 256
# Outcomes that add or remove chunks, and so may move the corpus's mean chunk length.
_CHANGES_CHUNKS = (Outcome.NEW, Outcome.UPDATED, Outcome.PRUNED)


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
    root: Root | None = None
    relative_path: str = ""
    url: str = ""


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
    base_url: str = "",
    observer: IngestObserver | None = None,
) -> IngestReport:
    """Bring the knowledge base in line with the files under `paths`.

    Unchanged files (same content hash) are skipped unless `full`; changed files are replaced in
    one transaction each; with `prune`, documents under `paths` whose files are gone are deleted.
    `base_url` (already checked, see `publishing.base_url_clean`) is recorded for the roots in
    `paths`; every document gets its page's URL and its path relative to its root.
    One bad file never stops the others: it is reported and the rest carry on. A re-embed that
    switches the model while this runs stops it with EmbeddingIndexChangedError instead: every
    vector it has left would be of the old model.
    """
    started = time.perf_counter()
    observer = observer or IngestObserver()
    report = IngestReport(dry_run=dry_run)

    def record(result: FileResult) -> None:
        report.results.append(result)
        if not dry_run:  # a dry run changes nothing, so it counts nothing
            record_ingest(str(result.outcome), result.chunks)
        if observer.on_file:
            observer.on_file(result)

    if dry_run:
        embedding_index_check(embeddings=embeddings)  # a dry run must fail where a real one would
    else:
        embedding_index_prepare(embeddings=embeddings)
    roots = [
        root
        for _, root in roots_for(
            paths, base_url=base_url, key_for=source_path_for, save=not dry_run
        )
    ]
    known = {
        row[0]: row[1:]
        for row in Document.objects.values_list(
            "source_path", "content_hash", "url", "relative_path", "root_id"
        )
    }
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
        pending = _prepare(
            found.path,
            key,
            known,
            root=_root_of(key, roots),
            full=full,
            dry_run=dry_run,
            record=record,
        )
        if pending is None:
            continue
        if dry_run:
            record(FileResult(key, pending.outcome, chunks=len(pending.chunks), url=pending.url))
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
                with transaction.atomic():
                    Document.objects.filter(source_path=key).delete()
                    knowledge_base_changed()
            record(FileResult(key, Outcome.PRUNED))
    if not dry_run and any(r.outcome in _CHANGES_CHUNKS for r in report.results):
        # One pass over the chunks; rewrites BM25 weights only if the mean length moved.
        bm25_refresh()
    report.seconds = time.perf_counter() - started
    return report


def _root_of(key: str, roots: list[Root]) -> Root | None:
    """The most specific root of this run that holds the document keyed `key`."""
    holding = [r for r in roots if key.startswith(r.key.rstrip("/") + "/")]
    return max(holding, key=lambda r: len(r.key)) if holding else None


def _links(loaded: LoadedDocument, key: str, root: Root | None) -> tuple[str, str]:
    """(path relative to the root, the page's URL or "") for a loaded file."""
    relative = root.relative(key) if root else Path(key).name
    page = page_url(root.base_url, relative) if root and root.base_url else ""
    # The page's own front matter or canonical link wins over the root's.
    return relative, (own_url(loaded.url, page) if loaded.url else "") or page


def _prepare(
    path: Path, key: str, known: dict, *, root: Root | None, full: bool, dry_run: bool, record
) -> _Pending | None:
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
    relative, url = _links(loaded, key, root)
    root_id = root.row.pk if root and root.row else None
    if key in known and known[key][0] == content_hash and not full:
        if not dry_run and known[key][1:] != (url, relative, root_id):
            # Only where it is published changed (a new --base-url): no need to re-embed. Still
            # a change: an answer's sources carry these links, so none is reused with old ones.
            with transaction.atomic():
                Document.objects.filter(source_path=key).update(
                    url=url, relative_path=relative, root_id=root_id
                )
                knowledge_base_changed()
        record(FileResult(key, Outcome.UNCHANGED, url=url))
        return None
    chunks = document_chunks(loaded)
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
        root=root,
        relative_path=relative,
        url=url,
    )


def document_chunks(loaded: LoadedDocument) -> list[ChunkDraft]:
    """The document's chunks; a PDF's are made page by page, so each one has a single page."""

    def split(text: str) -> list[ChunkDraft]:
        return chunk_document(
            text,
            title=loaded.title,
            chunk_size=settings.RAG_CHUNK_SIZE,
            chunk_overlap=settings.RAG_CHUNK_OVERLAP,
        )

    if not loaded.pages:
        return split(loaded.text)
    chunks: list[ChunkDraft] = []
    for number, page in enumerate(loaded.pages, 1):
        for draft in split(page) if page.strip() else []:
            chunks.append(replace(draft, ordinal=len(chunks), page=number))
    return chunks


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
        knowledge_base_changed()  # with the document, so no run sees one without the other
        document, _ = Document.objects.select_for_update().update_or_create(
            source_path=pending.source_path,
            defaults={
                "title": pending.title,
                "format": pending.format,
                "content_hash": pending.content_hash,
                "size_bytes": pending.size_bytes,
                "metadata": pending.metadata,
                "root": pending.root.row if pending.root else None,
                "relative_path": pending.relative_path[:1024],
                "url": pending.url[:2000],
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
                    metadata=_chunk_metadata(draft),
                )
                for draft, vector in zip(pending.chunks, vectors, strict=True)
            ],
            batch_size=500,
        )
    record(FileResult(pending.source_path, pending.outcome, chunks=len(pending.chunks)))
    return len(pending.chunks)


def _chunk_metadata(draft: ChunkDraft) -> dict:
    """Where in its page a chunk is: the PDF page, or the anchor of its section heading."""
    if draft.page is not None:
        return {"page": draft.page}
    anchor = heading_anchor(draft.heading) if draft.heading else ""
    return {"anchor": anchor} if anchor else {}


def _prunable(roots: list[Path], known: dict, seen: set[str]) -> list[str]:
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
