"""The best chunks of one page, ranked within that page: the first hit's page companions."""

import pytest

from ragapp.models import Chunk, Document
from ragapp.retrieval.page import best_of_page
from ragapp.retrieval.retrievers import HybridRetriever, VectorRetriever
from ragapp.services import embedding_index_prepare

pytestmark = pytest.mark.django_db

OPS = [
    "Restart the worker after changing its configuration file.",
    "The scheduler runs nightly jobs and cleans temporary files.",
    "Error E4711 means the licence server rejected the token.",
    "Backups are stored for thirty days in the archive bucket.",
    "The worker logs to the journal; read it with journalctl.",
]
OTHER = ["Error E4711 is also listed in the licence server's own manual, with the worker."]


@pytest.fixture
def pages(fake_embeddings):
    embedding_index_prepare(embeddings=fake_embeddings)
    made = {}
    for path, texts in (("docs/ops.md", OPS), ("docs/licence.md", OTHER)):
        document = Document.objects.create(
            source_path=path, title=path, format="markdown", content_hash=path, size_bytes=1
        )
        made[path] = [
            Chunk.objects.create(
                document=document,
                ordinal=ordinal,
                text=text,
                heading_path=path,
                embedding=fake_embeddings.embed_query(text),
            )
            for ordinal, text in enumerate(texts)
        ]
    return made


def test_a_pages_best_chunks_come_from_that_page_only_and_skip_the_excluded(pages, fake_embeddings):
    ops = pages["docs/ops.md"]
    query = "what does error E4711 mean for the worker"
    ids = best_of_page(
        ops[0].document_id,
        vector=fake_embeddings.embed_query(query),
        dimensions=fake_embeddings.dimensions,
        query=query,
        n=3,
        exclude={ops[0].id},
    )
    assert len(ids) == 3 and ops[0].id not in ids
    assert set(ids) <= {chunk.id for chunk in ops}
    assert ids[0] == ops[2].id  # the rare word's chunk leads the page


def test_without_words_the_page_is_ranked_by_cosine_alone(pages, fake_embeddings):
    ops = pages["docs/ops.md"]
    query = "Backups are stored for thirty days in the archive bucket."
    vector = fake_embeddings.embed_query(query)
    ids = best_of_page(
        ops[0].document_id,
        vector=vector,
        dimensions=fake_embeddings.dimensions,
        query=None,
        n=len(ops),
        exclude=set(),
    )
    assert ids[0] == ops[3].id and sorted(ids) == sorted(chunk.id for chunk in ops)
    assert (
        best_of_page(
            ops[0].document_id, vector=vector, dimensions=1, query=None, n=0, exclude=set()
        )
        == []
    )


@pytest.mark.parametrize("retriever", [VectorRetriever, HybridRetriever])
def test_only_the_first_hit_draws_on_its_page(retriever, pages, fake_embeddings):
    query = "Restart the worker after changing its configuration file"
    docs = retriever(fake_embeddings, per_document_cap=1).search(
        query, k=2, companions=1, page_companions=2
    )
    [plain] = [retriever(fake_embeddings, per_document_cap=1).search(query, k=2, companions=1)]
    assert [d.chunk_id for d in docs] == [d.chunk_id for d in plain]  # the hits do not change
    first = docs[0]
    own = set(Chunk.objects.filter(document_id=first.document_id).values_list("text", flat=True))
    assert len(first.companions) == len(plain[0].companions) + 2
    assert set(first.companions) <= own - {first.text}
    assert len(set(first.companions)) == len(first.companions)  # no chunk twice
    assert docs[1].companions == plain[1].companions
