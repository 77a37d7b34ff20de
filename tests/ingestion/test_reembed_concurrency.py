"""Re-embedding while ingests and searches run: never two models' vectors, and no long waits.

The models here have the same dimension on purpose: only the model name the index records tells
their vectors apart, so a mix would go unnoticed by PostgreSQL and by the dimension check.
Threads are ordered with events, never with sleeps or timed assertions; HANG_GUARD_S only stops a
deadlock from hanging the suite, and a wait that runs into it is reported as a failure.
"""

import re
import threading
from pathlib import Path

import numpy as np
import pytest
from django.db import connection, connections

from ingestion.services import ingest_paths
from ragapp.models import Chunk, Document, EmbeddingIndex
from ragapp.providers.fake_embeddings import FakeEmbeddings
from ragapp.retrieval.retrievers import HybridRetriever, VectorRetriever, one_snapshot
from ragapp.retrieval.vector import INDEX_NAME, drop_hnsw_index, embedding_text
from ragapp.selectors import EmbeddingMismatchError
from ragapp.services import index as index_services
from ragapp.services.index import (
    EmbeddingIndexChangedError,
    ReembedIncompleteError,
    embedding_index_reembed,
)

pytestmark = pytest.mark.django_db(transaction=True)

HANG_GUARD_S = 60  # the work takes well under a second; only a deadlock gets near this
QUERY = "How do I rotate the gateway certificate?"


class ReversedFake(FakeEmbeddings):
    """Another model of the same dimension: the fake model's vectors, reversed."""

    def __init__(self):
        super().__init__()
        self.model_name = "hashed-bow-64-reversed"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [vector[::-1] for vector in super().embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        return super().embed_query(text)[::-1]


class Gate:
    """Holds the first embedding call that reaches it until the test lets it go."""

    def __init__(self):
        self.reached = threading.Event()
        self.release = threading.Event()
        self.released_in_time: bool | None = None

    def pause(self) -> None:
        if not self.reached.is_set():
            self.reached.set()
            self.released_in_time = self.release.wait(HANG_GUARD_S)


def gated(model_class):
    """`model_class` whose first `embed_documents` call pauses at a gate, vectors computed."""

    class Gated(model_class):
        def __init__(self, gate: Gate):
            super().__init__()
            self.gate = gate

        def embed_documents(self, texts):
            vectors = super().embed_documents(texts)
            self.gate.pause()
            return vectors

    return Gated


def in_thread(work, outcome: dict) -> threading.Thread:
    """Start `work` on its own connection; its result or exception lands in `outcome`."""

    def run():
        try:
            outcome["result"] = work()
        except Exception as exc:
            outcome["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def models_of_stored_vectors(models: dict) -> list[str]:
    """For every chunk, which of `models` computed its stored vector ("?" for none)."""
    rows = Chunk.objects.values_list("heading_path", "text", "embedding")
    return [model_of(v, embedding_text(heading_path=h, text=t), models) for h, t, v in rows]


def model_of(vector, text: str, models: dict) -> str:
    matching = (name for name, m in models.items() if np.allclose(vector, m.embed_query(text)))
    return next(matching, "?")


def hnsw_index_dimensions() -> int | None:
    """The dimension the HNSW index casts to, or None when there is no index."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [INDEX_NAME])
        row = cursor.fetchone()
    # The index casts to halfvec(N) since migration 0006 (vector(N) before).
    return int(re.search(r"::(?:halfvec|vector)\((\d+)\)", row[0])[1]) if row else None


@pytest.fixture
def docs(tmp_path: Path, fake_embeddings) -> Path:
    """A small knowledge base embedded with the fake model."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "gateway.md").write_text(
        "# Gateway certificate\n\nRotate the gateway certificate every year.\n\n"
        "## Reload\n\nReload the gateway after rotating the certificate.\n"
    )
    (folder / "billing.md").write_text("# Billing\n\nInvoices are sent monthly.\n")
    ingest_paths(paths=[folder], embeddings=fake_embeddings)
    return folder


def test_an_ingest_embedding_while_a_reembed_commits_stores_no_old_model_vectors(
    tmp_path, docs, fake_embeddings
):
    old, new = fake_embeddings, ReversedFake()
    late = tmp_path / "late"
    late.mkdir()
    (late / "late.md").write_text("# Late page\n\nWritten while the model changed.\n")
    gate = Gate()
    slow_old = gated(FakeEmbeddings)(gate)  # the old model, paused mid-ingest
    ingest = {}
    thread = in_thread(lambda: ingest_paths(paths=[late], embeddings=slow_old), ingest)

    assert gate.reached.wait(HANG_GUARD_S), "the ingest never started embedding"
    embedding_index_reembed(embeddings=new)  # commits while the ingest holds old vectors
    gate.release.set()
    thread.join(HANG_GUARD_S)

    assert not thread.is_alive()
    assert gate.released_in_time  # the re-embed finished while the ingest was still embedding
    labels = models_of_stored_vectors({"old": old, "new": new})
    assert labels and set(labels) == {"new"}, labels
    assert EmbeddingIndex.objects.get().model == new.model_id
    assert not Document.objects.filter(title="Late page").exists()
    # The ingest stopped, saying why, rather than storing the old model's vectors.
    assert isinstance(ingest.get("error"), EmbeddingIndexChangedError), ingest
    assert f"changed to {new.model_id} (64 dimensions)" in str(ingest["error"])


def test_a_search_during_a_reembed_does_not_wait_for_it(docs, fake_embeddings):
    old = fake_embeddings
    gate = Gate()
    slow_new = gated(ReversedFake)(gate)  # paused after embedding its first batch
    reembed = {}
    thread = in_thread(lambda: embedding_index_reembed(embeddings=slow_new), reembed)

    assert gate.reached.wait(HANG_GUARD_S), "the re-embed never started embedding"
    # The re-embed holds its lock and is mid-run. A search that waited for it would return only
    # after the gate gave up (`released_in_time` False), and then find the new model recorded.
    try:
        hits = {
            "vector": VectorRetriever(old).search(QUERY, k=1),
            "hybrid": HybridRetriever(old).search(QUERY, k=1),
        }
    except EmbeddingMismatchError as exc:
        hits = exc
    gate.release.set()
    thread.join(HANG_GUARD_S)

    assert not thread.is_alive()
    assert gate.released_in_time, f"the search waited for the whole re-embed: {hits}"
    assert reembed.get("result") == 3, reembed
    assert {mode: docs[0].title for mode, docs in hits.items()} == {
        "vector": "Gateway certificate",
        "hybrid": "Gateway certificate",
    }
    # After the switch the old model is refused and the new one finds the same page.
    with pytest.raises(EmbeddingMismatchError):
        VectorRetriever(old).search(QUERY, k=1)
    assert VectorRetriever(ReversedFake()).search(QUERY, k=1)[0].title == "Gateway certificate"


def test_every_snapshot_during_a_reembed_holds_one_model(docs, fake_embeddings, monkeypatch):
    """A reader polling through a batched re-embed sees the old model or the new, never both."""
    monkeypatch.setattr(index_services, "REEMBED_BATCH", 1)  # many batches, many commits
    old, new = fake_embeddings, ReversedFake()
    models = {old.model_id: old, new.model_id: new}
    problems: list[str] = []
    reads: list[str] = []
    a_read_finished = threading.Event()
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            with one_snapshot():
                recorded = EmbeddingIndex.objects.get().model
                labels = set(models_of_stored_vectors(models))
            if labels != {recorded}:
                problems.append(f"index records {recorded}, vectors from {labels}")
            reads.append(recorded)
            a_read_finished.set()

    def read_once(done: int, total: int) -> None:
        # After each committed batch, let one more read finish, so reads overlap the whole run.
        a_read_finished.clear()
        assert a_read_finished.wait(HANG_GUARD_S), "the reader is stuck"

    poller = in_thread(poll, {})
    try:
        count = embedding_index_reembed(embeddings=new, on_progress=read_once)
    finally:
        stop.set()
        poller.join(HANG_GUARD_S)

    assert count == 3
    assert not problems, problems[:5]
    assert old.model_id in reads  # reads happened during the run
    assert set(models_of_stored_vectors(models)) == {new.model_id}
    assert hnsw_index_dimensions() == 64


def test_a_chunk_written_without_the_lock_during_a_reembed_stops_it(docs, fake_embeddings):
    """The swap refuses to leave any chunk with an old vector; nothing changes, index kept."""
    old, new = fake_embeddings, ReversedFake()
    first = Chunk.objects.order_by("id").first()
    fields = {
        "id": first.id,
        "document_id": first.document_id,
        "ordinal": first.ordinal,
        "text": first.text,
        "heading_path": first.heading_path,
        "embedding": first.embedding,
    }
    first.delete()

    def sneak_in(done: int, total: int) -> None:
        # Behind the re-embed's position (a lower id), so its paging never comes back for it.
        if not Chunk.objects.filter(id=fields["id"]).exists():
            Chunk.objects.create(**fields)

    with pytest.raises(ReembedIncompleteError, match="1 chunk"):
        embedding_index_reembed(embeddings=new, on_progress=sneak_in)

    assert EmbeddingIndex.objects.get().model == old.model_id
    assert set(models_of_stored_vectors({"old": old, "new": new})) == {"old"}
    assert hnsw_index_dimensions() == 64  # dropped for the swap, then given back


def test_an_ingest_rebuilds_an_index_a_killed_reembed_left_dropped(tmp_path, docs, fake_embeddings):
    drop_hnsw_index()  # as a re-embed killed between dropping and rebuilding leaves it
    assert hnsw_index_dimensions() is None
    (docs / "more.md").write_text("# More\n\nAnother page.\n")
    ingest_paths(paths=[docs], embeddings=fake_embeddings)
    assert hnsw_index_dimensions() == 64
