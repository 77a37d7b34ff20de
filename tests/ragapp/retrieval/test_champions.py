"""Champion lists (migration 0010): a BM25 search that reads them ranks exactly as one that
scores every chunk of its words, and the triggers keep them right through every kind of write.

The thresholds are lowered so that a few dozen chunks have frequent words: a word is frequent
above 4 chunks, a list must hold its top 5 (a search of limit 5 may rely on it), and holds at
most 8 entries.
"""

import random

import pytest
from django.db import connection

from ragapp.models import Chunk, Document
from ragapp.retrieval import text_search
from ragapp.services import embedding_index_prepare

pytestmark = pytest.mark.django_db

WORDS = (
    "vacuum index replica checkpoint backup restore tablespace autovacuum trigger sequence "
    "schema partition cursor lock snapshot archive"
).split()
LIMIT = 5


def _sql(query, params=()):
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        return cursor.fetchall() if cursor.description else None


def _set_thresholds(minimum, champions=LIMIT, capacity=8):
    _sql(
        "UPDATE ragapp_bm25_collection SET champion_min_chunks = %s, champions = %s, "
        "champion_capacity = %s",
        [minimum, champions, capacity],
    )
    _sql("DELETE FROM ragapp_bm25_champion")
    _sql("UPDATE ragapp_bm25_term SET champion_depth = 0")
    _sql(
        "SELECT rag_bm25_champions_rebuild(ARRAY(SELECT lexeme FROM ragapp_bm25_term "
        "WHERE chunks > %s))",
        [minimum],
    )


def _text(rnd):
    words = [rnd.choice(WORDS) for _ in range(rnd.randint(2, 12))]
    return " ".join(words) + "."


def _chunk(document, ordinal, rnd):
    return Chunk(document=document, ordinal=ordinal, text=_text(rnd), embedding=[1.0] + [0.0] * 63)


@pytest.fixture
def corpus(fake_embeddings):
    embedding_index_prepare(embeddings=fake_embeddings)
    rnd = random.Random(5)
    documents = [
        Document.objects.create(
            source_path=f"docs/{n}.md",
            title=f"Page {n}",
            format="markdown",
            content_hash="h",
            size_bytes=1,
        )
        for n in range(6)
    ]
    Chunk.objects.bulk_create([_chunk(documents[n % 6], n, rnd) for n in range(90)])
    _set_thresholds(minimum=4)
    return documents


def _lists_are_right():
    """Every list holds its word's top `depth` chunks, at most `capacity` entries, and every
    word in more than `champion_min_chunks` chunks has a list at least `champions` deep."""
    ((minimum, champions, capacity),) = _sql(
        "SELECT champion_min_chunks, champions, champion_capacity FROM ragapp_bm25_collection"
    )
    for lexeme, chunks, depth in _sql(
        "SELECT lexeme, chunks, champion_depth FROM ragapp_bm25_term"
    ):
        listed = {
            row[0]
            for row in _sql("SELECT chunk_id FROM ragapp_bm25_champion WHERE lexeme = %s", [lexeme])
        }
        top = (
            [
                row[0]
                for row in _sql(
                    "SELECT id FROM ragapp_chunk WHERE search_vector @@ quote_literal(%s)::tsquery "
                    "ORDER BY rag_bm25_weight(bm25, %s) DESC, id LIMIT %s",
                    [lexeme, lexeme, depth],
                )
            ]
            if depth > 0
            else []
        )
        assert set(top) <= listed, lexeme
        assert len(listed) <= capacity, lexeme
        if chunks > minimum:
            assert depth >= champions, lexeme


def _queries(rnd, n=40):
    return [" ".join(rnd.sample(WORDS, rnd.randint(1, 3))) for _ in range(n)]


def _rankings(queries):
    return [text_search.bm25_chunk_ids(q, limit=LIMIT) for q in queries]


def _ranked_without_lists(queries):
    ((minimum,),) = _sql("SELECT champion_min_chunks FROM ragapp_bm25_collection")
    _sql("UPDATE ragapp_bm25_collection SET champion_min_chunks = 1000000")
    try:
        return _rankings(queries)
    finally:
        _sql("UPDATE ragapp_bm25_collection SET champion_min_chunks = %s", [minimum])


def test_searches_use_the_lists_and_rank_exactly_as_a_full_scoring(corpus):
    queries = _queries(random.Random(1))
    terms = text_search.query_terms(queries[0])
    assert all(terms.depths[t] >= LIMIT for t in terms.frequencies)  # every word is frequent
    assert _rankings(queries) == _ranked_without_lists(queries)
    _lists_are_right()


def test_lists_stay_right_through_inserts_deletes_and_edits(corpus):
    rnd = random.Random(2)
    queries = _queries(rnd)
    for step in range(6):
        document = corpus[step % len(corpus)]
        Chunk.objects.bulk_create([_chunk(document, 100 + step * 10 + n, rnd) for n in range(4)])
        doomed = list(Chunk.objects.order_by("?").values_list("id", flat=True)[:7])
        Chunk.objects.filter(id__in=doomed).delete()
        edited = Chunk.objects.order_by("?").first()
        Chunk.objects.filter(id=edited.id).update(text=_text(rnd))
        _lists_are_right()
        assert _rankings(queries) == _ranked_without_lists(queries), step


def test_deletions_lower_a_lists_depth_until_it_is_rebuilt(corpus):
    word = "vacuum"
    ((depth,),) = _sql("SELECT champion_depth FROM ragapp_bm25_term WHERE lexeme = %s", [word])
    assert depth == 8
    best = _sql(
        "SELECT chunk_id FROM ragapp_bm25_champion WHERE lexeme = %s "
        "ORDER BY weight DESC, chunk_id LIMIT 2",
        [word],
    )
    Chunk.objects.filter(id__in=[row[0] for row in best]).delete()
    assert _sql("SELECT champion_depth FROM ragapp_bm25_term WHERE lexeme = %s", [word]) == [(6,)]
    more = _sql(
        "SELECT chunk_id FROM ragapp_bm25_champion WHERE lexeme = %s "
        "ORDER BY weight DESC, chunk_id LIMIT 2",
        [word],
    )
    Chunk.objects.filter(id__in=[row[0] for row in more]).delete()
    # Under `champions` (5): rebuilt from the chunks left, at full capacity again.
    assert _sql("SELECT champion_depth FROM ragapp_bm25_term WHERE lexeme = %s", [word]) == [(8,)]
    _lists_are_right()


def test_a_word_that_becomes_frequent_gets_a_list(corpus):
    document = corpus[0]
    for n in range(5):
        Chunk.objects.create(
            document=document,
            ordinal=300 + n,
            text=f"Logical decoding slot {n}.",
            embedding=[1.0] + [0.0] * 63,
        )
        ((depth,),) = _sql("SELECT champion_depth FROM ragapp_bm25_term WHERE lexeme = 'decod'")
        assert depth == (8 if n + 1 > 4 else 0)
    _lists_are_right()


def test_a_query_with_a_common_word_is_scored_in_full(corpus):
    # "cursor" in every chunk: common (over a fifth of the chunks), so it scores without
    # selecting, and the lists' argument does not hold; the ranking must still be exact.
    _sql("UPDATE ragapp_chunk SET text = text || ' cursor'")
    queries = [f"cursor {w}" for w in WORDS if w != "cursor"]
    assert _rankings(queries) == _ranked_without_lists(queries)


def test_bm25_refresh_rebuilds_the_lists(corpus):
    text_search.bm25_refresh(tolerance=0.0)
    _sql("UPDATE ragapp_chunk SET bm25_mean_chars = bm25_mean_chars * 1.5")
    _lists_are_right()


def test_truncating_the_chunks_empties_the_lists(corpus):
    _sql("TRUNCATE ragapp_chunk CASCADE")
    assert _sql("SELECT count(*) FROM ragapp_bm25_champion") == [(0,)]
