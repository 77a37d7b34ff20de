"""Ingestion while queries run: searches never see a half-replaced document, and nothing locks up.

Two writers re-ingest one page over and over (its text, its title and its number of chunks change
each time) while readers search it with both retrievers and read it through the ORM. Every
answer must hold exactly one version of the page: its title and all its chunks from the same
version, and as many chunks as that version has. Every thread must finish in time.
"""

import os
import re
import threading

import pytest
from django.db import connections
from django.db.models import Count

from ingestion.services import ingest_paths, source_path_for
from ragapp.models import Chunk, Document
from ragapp.retrieval.retrievers import HybridRetriever, VectorRetriever

pytestmark = pytest.mark.django_db(transaction=True)

QUERY = "How do I rotate the gateway certificate?"
REVISIONS_PER_WRITER = 15
JOIN_TIMEOUT_S = 120  # generous: the work takes a few seconds; only a hang gets near this
_REVISION = re.compile(r"revision (\d+)")


def sections(revision: int) -> int:
    """Odd revisions have 4 sections (so 4 chunks), even ones 3."""
    return 4 if revision % 2 else 3


def page_text(revision: int) -> str:
    parts = [f"# Gateway certificate v{revision}\n"]
    for step in range(sections(revision)):
        parts.append(
            f"## Step {step} of revision {revision}\n\n"
            f"Rotate the gateway certificate, step {step}, revision {revision}. "
            + "The gateway certificate rotation keeps the old certificate until reload. "
            * 8
        )
    return "\n".join(parts)


def check(texts_and_titles: list[tuple[str, str]], where: str) -> str | None:
    """A problem with one read of the page, or None when it is one whole version."""
    if not texts_and_titles:
        return f"{where}: the page has no chunks"
    revisions = {int(m) for text, _ in texts_and_titles for m in _REVISION.findall(text)}
    titles = {title for _, title in texts_and_titles}
    if len(revisions) != 1 or len(titles) != 1:
        return f"{where}: mixed versions {sorted(revisions)} {sorted(titles)}"
    revision = revisions.pop()
    if titles.pop() != f"Gateway certificate v{revision}":
        return f"{where}: title of another version than its chunks (revision {revision})"
    if len(texts_and_titles) != sections(revision):
        return f"{where}: {len(texts_and_titles)} chunks of revision {revision}"
    return None


def test_searches_during_repeated_reingestion_see_whole_versions(tmp_path, fake_embeddings):
    page = tmp_path / "gateway.md"
    page.write_text(page_text(0))
    (tmp_path / "other.md").write_text("# Billing\n\nInvoices are monthly.\n")
    ingest_paths(paths=[tmp_path], embeddings=fake_embeddings)
    key = source_path_for(page)
    assert Chunk.objects.filter(document__source_path=key).count() == sections(0)

    retrievers = {
        "vector": VectorRetriever(fake_embeddings),
        "hybrid": HybridRetriever(fake_embeddings),
    }
    problems: list[str] = []
    reads = {"vector": 0, "hybrid": 0, "orm": 0}
    writes = [0]
    writing = threading.Event()
    writing.set()

    def guarded(work):
        def run():
            try:
                work()
            except Exception as exc:  # a deadlock PostgreSQL broke, a lock timeout, a bug
                problems.append(f"{threading.current_thread().name}: {exc!r}")
            finally:
                connections.close_all()

        return run

    def writer(first: int):
        scratch = tmp_path / f"scratch-{first}"
        scratch.mkdir()
        for revision in range(first, first + 2 * REVISIONS_PER_WRITER, 2):
            # Replaced whole, so a load reads one revision (maybe the other writer's: fine).
            draft = scratch / "gateway.md"
            draft.write_text(page_text(revision))
            os.replace(draft, page)
            ingest_paths(paths=[page], embeddings=fake_embeddings)
            writes[0] += 1

    def searcher(mode: str):
        def work():
            while writing.is_set():
                docs = retrievers[mode].search(QUERY, k=20)
                mine = [(d.text, d.title) for d in docs if d.source_path == key]
                problem = check(mine, mode)
                if problem:
                    problems.append(problem)
                reads[mode] += 1

        return work

    def orm_reader():
        while writing.is_set():
            rows = list(
                Chunk.objects.filter(document__source_path=key).values_list(
                    "text", "document__title"
                )
            )
            problem = check(rows, "orm")
            if problem:
                problems.append(problem)
            counted = (
                Document.objects.filter(source_path=key)
                .annotate(n=Count("chunks"))
                .values_list("n", flat=True)
                .get()
            )
            if counted not in (3, 4):
                problems.append(f"orm: the document has {counted} chunks")
            reads["orm"] += 1

    writers = [
        threading.Thread(target=guarded(lambda: writer(1)), name="writer-odd"),
        threading.Thread(target=guarded(lambda: writer(2)), name="writer-even"),
    ]
    readers = [
        threading.Thread(target=guarded(searcher("vector")), name="vector"),
        threading.Thread(target=guarded(searcher("hybrid")), name="hybrid"),
        threading.Thread(target=guarded(searcher("hybrid")), name="hybrid-2"),
        threading.Thread(target=guarded(orm_reader), name="orm"),
    ]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join(JOIN_TIMEOUT_S)
    writing.clear()
    for thread in readers:
        thread.join(JOIN_TIMEOUT_S)
    stuck = [thread.name for thread in readers + writers if thread.is_alive()]

    assert not stuck, f"threads still running after {JOIN_TIMEOUT_S} s (deadlock?): {stuck}"
    assert not problems, problems[:10]
    assert writes[0] == 2 * REVISIONS_PER_WRITER
    assert all(count > 0 for count in reads.values()), reads  # every reader overlapped writes
    final = Chunk.objects.filter(document__source_path=key).values_list("text", "document__title")
    assert check(list(final), "after") is None
    assert Document.objects.count() == 2
