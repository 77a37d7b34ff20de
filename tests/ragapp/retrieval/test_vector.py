"""Cosine top-k retrieval through the HNSW index, and the embedding-model guard."""

import itertools
import random

import numpy as np
import pytest
from django.db import connection

from ragapp.models import Chunk, Document
from ragapp.providers.fake_embeddings import FakeEmbeddings
from ragapp.retrieval.vector import chunk_vector_search, cosine_distance_to, set_ef_search
from ragapp.selectors import EmbeddingMismatchError
from ragapp.services import embedding_index_prepare

pytestmark = pytest.mark.django_db

TOPICS = ["password reset", "vector index", "docker deployment", "api tokens", "backup restore"]


@pytest.fixture
def corpus(fake_embeddings):
    embedding_index_prepare(embeddings=fake_embeddings)
    document = Document.objects.create(
        source_path="docs/x.md", title="X", format="markdown", content_hash="0", size_bytes=1
    )
    rng = random.Random(7)
    texts = [
        f"{TOPICS[i % len(TOPICS)]} note {i} " + " ".join(rng.choices(["alpha", "beta"], k=5))
        for i in range(2000)
    ]
    Chunk.objects.bulk_create(
        Chunk(document=document, ordinal=i, text=t, embedding=v)
        for i, (t, v) in enumerate(zip(texts, fake_embeddings.embed_documents(texts), strict=True))
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE ragapp_chunk")
    return texts


def test_top_k_returns_the_nearest_chunks_in_order(corpus, fake_embeddings):
    results = chunk_vector_search(query="password reset", embeddings=fake_embeddings, k=5)
    assert len(results) == 5
    assert all("password reset" in r.chunk.text for r in results)
    similarities = [r.similarity for r in results]
    # Non-increasing, up to float32 rounding (the index stores single precision).
    assert all(a >= b - 1e-6 for a, b in itertools.pairwise(similarities))
    assert results[0].chunk.document.title == "X"  # no extra query per result


def test_the_query_plan_uses_the_hnsw_index(corpus, fake_embeddings):
    vector = fake_embeddings.embed_query("vector index")
    queryset = Chunk.objects.annotate(
        distance=cosine_distance_to(vector, dimensions=fake_embeddings.dimensions)
    ).order_by("distance")[:5]
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        set_ef_search(40)
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Scan using chunk_embedding_hnsw" in plan, plan


def test_hnsw_results_match_an_exact_scan(corpus, fake_embeddings):
    query = "docker deployment alpha"
    vector = np.array(fake_embeddings.embed_query(query))
    stored = {c.id: np.array(c.embedding) for c in Chunk.objects.only("id", "embedding")}
    exact = sorted((float(v @ vector) for v in stored.values()), reverse=True)[:5]
    found = chunk_vector_search(query=query, embeddings=fake_embeddings, k=5)
    # Ties may swap which ids come back, never the scores.
    assert [round(float(stored[r.chunk.id] @ vector), 5) for r in found] == [
        round(s, 5) for s in exact
    ]


def test_query_with_a_model_of_another_dimension_fails_with_a_reembed_hint(corpus):
    with pytest.raises(EmbeddingMismatchError) as excinfo:
        chunk_vector_search(query="anything", embeddings=FakeEmbeddings(dimensions=32), k=5)
    message = str(excinfo.value)
    assert "64 dimensions" in message and "32 dimensions" in message
    assert "manage.py ingest_docs --reembed" in message


def test_a_cap_per_document_still_fills_k_when_one_document_crowds_the_top(fake_embeddings):
    from ragapp.retrieval.retrievers import VectorRetriever

    embedding_index_prepare(embeddings=fake_embeddings)
    query = np.array(fake_embeddings.embed_query("password reset"))
    rng = np.random.default_rng(3)

    def near(spread):
        vector = query + spread * rng.standard_normal(query.shape)
        return (vector / np.linalg.norm(vector)).tolist()

    def document(name):
        return Document.objects.create(
            source_path=name, title=name, format="markdown", content_hash="0", size_bytes=1
        )

    # One long page whose 150 chunks are all nearer than any other page's best chunk: the
    # 40 nearest rows (what a capped search once ranked) hold a single document.
    crowd = document("crowd.md")
    Chunk.objects.bulk_create(
        Chunk(document=crowd, ordinal=i, text=f"crowd {i}", embedding=near(0.01))
        for i in range(150)
    )
    others = [document(f"other{i}.md") for i in range(6)]
    Chunk.objects.bulk_create(
        Chunk(document=d, ordinal=0, text=d.title, embedding=near(0.2)) for d in others
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE ragapp_chunk")
    found = VectorRetriever(fake_embeddings, per_document_cap=1).search("password reset", k=5)
    assert len({doc.document_id for doc in found}) == len(found) == 5
    assert found[0].document_id == crowd.id


def test_ef_search_keeps_a_margin_over_the_rows_asked_for(corpus):
    from django.db import transaction

    from ragapp.retrieval.vector import EF_SEARCH_PER_ROW, set_search_settings

    with transaction.atomic(), connection.cursor() as cursor:
        # A small table: the sized ef_search is RAG_HNSW_EF_SEARCH (100), so k decides.
        set_search_settings(k=80)
        cursor.execute("SHOW hnsw.ef_search")
        assert int(cursor.fetchone()[0]) == int(80 * EF_SEARCH_PER_ROW)
        set_search_settings(k=5)
        cursor.execute("SHOW hnsw.ef_search")
        assert int(cursor.fetchone()[0]) == 100


def test_ef_search_grows_with_the_table(corpus):
    from django.db import transaction

    from ragapp.retrieval.vector import set_search_settings

    with transaction.atomic(), connection.cursor() as cursor:
        # PostgreSQL's estimate of the table's size is what the search reads (rolled back).
        cursor.execute(
            "UPDATE pg_class SET reltuples = 1000000 WHERE oid = 'ragapp_chunk'::regclass"
        )
        set_search_settings(k=5)
        cursor.execute("SHOW hnsw.ef_search")
        assert int(cursor.fetchone()[0]) == 200  # 100 x 10 ** 0.3, rounded up
        transaction.set_rollback(True)
