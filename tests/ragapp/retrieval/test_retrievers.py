"""The graph's retrievers: dense vector search, and vector fused with full-text search."""

import re

import pytest

from ragapp.models import Chunk, Document
from ragapp.retrieval.retrievers import HybridRetriever, VectorRetriever, build_retriever
from ragapp.services import embedding_index_prepare

pytestmark = pytest.mark.django_db


@pytest.fixture
def chunks(fake_embeddings):
    embedding_index_prepare(embeddings=fake_embeddings)
    document = Document.objects.create(
        source_path="docs/ops.md", title="Ops", format="markdown", content_hash="h", size_bytes=1
    )
    texts = [
        "Restart the worker after changing its configuration file.",
        "The scheduler runs nightly jobs and cleans temporary files.",
        "Error E4711 means the licence server rejected the token.",
        "Backups are stored for thirty days in the archive bucket.",
    ]
    for ordinal, text in enumerate(texts):
        Chunk.objects.create(
            document=document,
            ordinal=ordinal,
            text=text,
            heading_path="Ops",
            embedding=fake_embeddings.embed_query(text),
        )
    return texts


def test_vector_retriever_returns_retrieved_docs_with_provenance(chunks, fake_embeddings):
    docs = VectorRetriever(fake_embeddings).search("restart the worker configuration", k=2)
    assert docs[0].text == chunks[0]
    assert (docs[0].title, docs[0].source_path, docs[0].heading_path) == (
        "Ops",
        "docs/ops.md",
        "Ops",
    )
    assert docs[0].similarity > docs[1].similarity


def test_hybrid_lifts_an_exact_term_that_dense_search_ranks_low(chunks, fake_embeddings):
    query = "what does e4711 mean for the nightly scheduler jobs"
    dense = [d.text for d in VectorRetriever(fake_embeddings).search(query, k=4)]
    hybrid = [d.text for d in HybridRetriever(fake_embeddings, text_weight=2.0).search(query, k=4)]
    # Full-text search matches the error code exactly; fusion moves it up.
    assert hybrid.index(chunks[2]) < dense.index(chunks[2]) or hybrid[0] == chunks[2]
    assert set(hybrid) == set(dense)  # same candidates, different order


def test_hybrid_includes_a_lexical_only_hit(chunks, fake_embeddings):
    docs = HybridRetriever(fake_embeddings).search("E4711", k=1)
    assert [d.text for d in docs] == [chunks[2]]


def test_a_query_with_no_words_falls_back_to_dense_only(chunks, fake_embeddings):
    docs = HybridRetriever(fake_embeddings).search("???", k=2)
    assert len(docs) == 2


def test_the_mode_setting_picks_the_retriever(fake_embeddings):
    assert build_retriever(mode="vector", embeddings=fake_embeddings).mode == "vector"
    assert build_retriever(mode="hybrid", embeddings=fake_embeddings).mode == "hybrid"


def test_the_per_document_cap_leaves_room_for_other_documents(knowledge_base, fake_embeddings):
    # alpha.md and beta.md have two chunks each; the question matches both alpha chunks best.
    query = "Alpha release setup installer configuration binary"
    uncapped = VectorRetriever(fake_embeddings).search(query, k=2)
    capped = VectorRetriever(fake_embeddings, per_document_cap=1).search(query, k=2)
    assert [d.source_path for d in uncapped] == ["docs/alpha.md", "docs/alpha.md"]
    assert capped[0] == uncapped[0]
    assert capped[1].source_path != "docs/alpha.md"
    fused = HybridRetriever(fake_embeddings, per_document_cap=1).search(query, k=3)
    assert len({d.document_id for d in fused}) == 3


@pytest.mark.parametrize("retriever", [VectorRetriever, HybridRetriever])
def test_each_hit_can_carry_its_documents_next_best_chunk(
    retriever, knowledge_base, fake_embeddings
):
    # alpha.md's two chunks both match best; with the cap, the second rides along as a companion.
    query = "Alpha release setup installer configuration binary"
    [best, second] = VectorRetriever(fake_embeddings).search(query, k=2)
    docs = retriever(fake_embeddings, per_document_cap=1).search(query, k=3, companions=1)
    assert docs[0].chunk_id == best.chunk_id and docs[0].companions == (second.text,)
    assert all(len(doc.companions) <= 1 for doc in docs)
    for doc in docs[1:]:  # a companion always comes from its hit's own document
        same = Chunk.objects.filter(document_id=doc.document_id).exclude(pk=doc.chunk_id)
        assert set(doc.companions) <= set(same.values_list("text", flat=True))
    without = retriever(fake_embeddings, per_document_cap=1).search(query, k=3)
    assert [d.chunk_id for d in without] == [d.chunk_id for d in docs]
    assert all(d.companions == () for d in without)


def test_companions_follow_the_ranking_and_skip_what_was_kept():
    from dataclasses import dataclass

    from ragapp.retrieval.retrievers import companions_of

    @dataclass
    class Hit:
        name: str
        document_id: int

    ranked = [Hit("a1", 1), Hit("a2", 1), Hit("b1", 2), Hit("a3", 1), Hit("c1", 3), Hit("b2", 2)]
    kept = [ranked[0], ranked[2], ranked[4]]
    found = companions_of(ranked, kept, n=2)
    assert {k: [h.name for h in v] for k, v in found.items()} == {0: ["a2", "a3"], 1: ["b2"]}
    assert companions_of(ranked, kept, n=0) == {}


def test_the_retriever_follows_the_settings(settings, fake_embeddings):
    settings.RAG_HYBRID_TEXT_WEIGHT = 0.8
    settings.RAG_MAX_CHUNKS_PER_DOCUMENT = 2
    hybrid = build_retriever(mode="hybrid", embeddings=fake_embeddings)
    assert (hybrid.text_weight, hybrid.per_document_cap) == (0.8, 2)
    assert build_retriever(mode="vector", embeddings=fake_embeddings).per_document_cap == 2


def test_a_lexical_only_hit_reports_its_cosine_similarity(chunks, fake_embeddings):
    [fused] = HybridRetriever(fake_embeddings).search("E4711", k=1)
    dense = VectorRetriever(fake_embeddings).search("E4711", k=4)
    [same] = [d for d in dense if d.chunk_id == fused.chunk_id]
    assert fused.similarity == pytest.approx(same.similarity, abs=1e-6)


def test_only_the_chunks_returned_are_read(chunks, fake_embeddings):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    # Candidates are ranked by id; the text of a chunk is read once, and only for the k kept.
    with CaptureQueriesContext(connection) as captured:
        docs = HybridRetriever(fake_embeddings).search("restart the worker scheduler", k=2)
    reads = [q["sql"] for q in captured.captured_queries if '"ragapp_chunk"."text"' in q["sql"]]
    assert len(docs) == 2
    assert len(reads) == 1
    read_ids = re.search(r'"ragapp_chunk"\."id" IN \(([^)]*)\)', reads[0]).group(1)
    assert {int(i) for i in read_ids.split(",")} == {d.chunk_id for d in docs}


@pytest.mark.parametrize("retriever", [VectorRetriever, HybridRetriever])
def test_the_nearest_chunks_within_given_pages_leave_out_the_excluded(
    retriever, knowledge_base, fake_embeddings
):
    beta = Document.objects.get(source_path="docs/beta.md")
    setup, logs = beta.chunks.order_by("ordinal")
    nearest = retriever(fake_embeddings).nearest_in
    query = "beta logs rotate daily keep seven days"

    # Only the given pages' chunks, nearest first, with their cosine similarity.
    docs = nearest(query, [beta.pk], exclude=[], k=5)
    assert [d.chunk_id for d in docs] == [logs.pk, setup.pk]
    assert docs[0].similarity > docs[1].similarity
    assert {d.source_path for d in docs} == {"docs/beta.md"} and not docs[0].excerpt
    # The excluded are left out, and at most k come back.
    assert [d.chunk_id for d in nearest(query, [beta.pk], exclude=[logs.pk], k=5)] == [setup.pk]
    assert len(nearest(query, [beta.pk], exclude=[], k=1)) == 1
    assert nearest(query, [], exclude=[], k=5) == [] == nearest(query, [beta.pk], exclude=[], k=0)
