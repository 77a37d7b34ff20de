"""BM25 full-text ranking in PostgreSQL (ragapp/retrieval/text_search.py)."""

import math

import pytest
from django.db import connection, transaction

from ragapp.models import Chunk, Document
from ragapp.retrieval import text_search
from ragapp.services import embedding_index_prepare

pytestmark = pytest.mark.django_db


def _add(document, ordinal, text, heading="Manual"):
    # Only the text matters here; the vector is any unit vector of the fake model's size.
    vector = [1.0] + [0.0] * 63
    return Chunk.objects.create(
        document=document, ordinal=ordinal, text=text, heading_path=heading, embedding=vector
    )


@pytest.fixture
def manual(fake_embeddings):
    embedding_index_prepare(embeddings=fake_embeddings)
    document = Document.objects.create(
        source_path="docs/manual.md",
        title="Manual",
        format="markdown",
        content_hash="h",
        size_bytes=1,
    )
    # "server" is in two chunks, "pg_dumpall" in one, "worker" in most (a common word).
    chunks = {
        "common": _add(document, 0, "The server server server reads the server configuration."),
        "rare": _add(document, 1, "Use pg_dumpall to save the roles of the server."),
    }
    for n in range(2, 12):
        chunks[f"filler{n}"] = _add(document, n, f"The worker number {n} starts.")
    return chunks


def test_a_rare_word_outweighs_a_repeated_common_one(manual):
    ids = text_search.bm25_chunk_ids("server pg_dumpall", limit=3)
    # ts_rank ranks the chunk that says "server" four times first; BM25 weighs the rarer word.
    assert ids == [manual["rare"].id, manual["common"].id]


def test_the_heading_path_counts_more_than_body_text(manual):
    document = manual["rare"].document
    in_heading = _add(document, 20, "Nothing else here.", heading="Manual > Tablespaces")
    in_body = _add(document, 21, "Tablespaces are mentioned once in this body text.")
    ids = text_search.bm25_chunk_ids("tablespaces", limit=5)
    assert ids.index(in_heading.id) < ids.index(in_body.id)


def test_shorter_chunks_win_at_equal_counts(manual):
    document = manual["rare"].document
    short = _add(document, 30, "Checkpoints flush data.")
    long = _add(document, 31, "Checkpoints " + "and many other unrelated words " * 20)
    assert text_search.bm25_chunk_ids("checkpoints", limit=2) == [short.id, long.id]


def test_only_stop_words_or_unknown_words_find_nothing(manual):
    assert text_search.bm25_chunk_ids("what is the", limit=5) == []
    assert text_search.bm25_chunk_ids("zyxwvut", limit=5) == []
    assert text_search.bm25_chunk_ids("", limit=5) == []


def test_a_query_of_common_words_still_selects(manual):
    # "worker" is in 10 of 12 chunks, above the common share, yet it is all the query has.
    assert len(text_search.bm25_chunk_ids("workers", limit=20)) == 10


def test_common_words_score_but_do_not_select(manual):
    # With a rarer word present, candidates come from it alone.
    assert text_search.bm25_chunk_ids("worker pg_dumpall", limit=20) == [manual["rare"].id]


def _counted_from_the_chunks() -> tuple[dict[str, int], int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT u.lexeme, count(*) FROM ragapp_chunk c, unnest(c.search_vector) u GROUP BY 1"
        )
        return dict(cursor.fetchall()), Chunk.objects.count()


def _stored_statistics() -> tuple[dict[str, int], int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT lexeme, chunks FROM ragapp_bm25_term WHERE chunks <> 0")
        terms = dict(cursor.fetchall())
        cursor.execute("SELECT chunks FROM ragapp_bm25_collection")
        return terms, cursor.fetchone()[0]


def test_a_new_word_is_counted_as_soon_as_it_is_stored(manual):
    before = text_search.query_terms("the checkpointer")
    _add(manual["rare"].document, 40, "The checkpointer runs.")
    after = text_search.query_terms("the checkpointer")
    assert (before.frequencies, before.chunks) == ({"checkpoint": 0}, 12)
    assert (after.frequencies, after.chunks) == ({"checkpoint": 1}, 13)


def test_statistics_stay_exact_through_every_kind_of_write(manual):
    document = manual["rare"].document
    assert _stored_statistics() == _counted_from_the_chunks()
    Chunk.objects.bulk_create(  # one statement, several chunks
        [
            Chunk(
                document=document,
                ordinal=50 + n,
                text=f"Vacuum pass {n}.",
                embedding=[1.0] + [0.0] * 63,
            )
            for n in range(3)
        ]
    )
    assert _stored_statistics() == _counted_from_the_chunks()
    Chunk.objects.filter(id=manual["rare"].id).update(text="Use pg_restore to load a dump.")
    Chunk.objects.filter(id=manual["common"].id).update(embedding=[0.0, 1.0] + [0.0] * 62)
    assert _stored_statistics() == _counted_from_the_chunks()
    Chunk.objects.filter(ordinal__gte=50).delete()
    assert _stored_statistics() == _counted_from_the_chunks()
    text_search.bm25_refresh(tolerance=0.0)  # rewrites every row's weights, not its words
    assert _stored_statistics() == _counted_from_the_chunks()
    document.delete()
    assert _stored_statistics() == ({}, 0)


def test_statistics_roll_back_with_the_write(manual):
    before = _stored_statistics()
    with pytest.raises(RuntimeError), transaction.atomic():
        _add(manual["rare"].document, 60, "Autovacuum tunes itself.")
        raise RuntimeError("the ingest failed")
    assert _stored_statistics() == before


def test_truncating_the_chunks_empties_the_statistics(manual):
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE ragapp_chunk CASCADE")
    assert _stored_statistics() == ({}, 0)
    assert text_search.bm25_chunk_ids("pg_dumpall", limit=1) == []


def test_idf_is_positive_and_falls_with_frequency():
    assert text_search.idf(1, 1000) > text_search.idf(500, 1000) > text_search.idf(1000, 1000) > 0
    assert text_search.idf(1, 1000) == pytest.approx(math.log(1 + 999.5 / 1.5))


@pytest.mark.parametrize(
    "query",
    [
        r"C:\temp\ then pg_dumpall \\",
        "it's O'Reilly's \"quoted\" pg_dumpall",
        "pg_dumpall & !server | (roles) <-> :* 'x'",
        "E'\\\\' pg_dumpall",
        "пароль 密码 🙂 pg_dumpall",
        "pg_dumpall " * 200,
    ],
)
def test_any_text_is_a_query_never_tsquery_syntax(manual, query):
    assert text_search.bm25_chunk_ids(query, limit=3)[:1] == [manual["rare"].id]


def _reference_bm25(chunk_texts: dict[int, str], query_words: dict, mean: float) -> dict:
    """BM25 written out in Python over the tsvectors PostgreSQL stored, for the check below."""
    from django.db import connection

    scores = {}
    with connection.cursor() as cursor:
        for chunk_id in chunk_texts:
            cursor.execute(
                "SELECT u.lexeme, coalesce(cardinality(u.positions), 1), "
                "coalesce(cardinality(array_positions(u.weights, 'A')), 0), length(c.text) "
                "FROM ragapp_chunk c, unnest(c.search_vector) u WHERE c.id = %s",
                [chunk_id],
            )
            for lexeme, count, in_heading, chars in cursor.fetchall():
                if lexeme in query_words:
                    tf = count + (text_search.HEADING_BOOST - 1) * in_heading
                    norm = text_search.K1 * (1 - text_search.B + text_search.B * chars / mean)
                    weight = query_words[lexeme] * tf * (text_search.K1 + 1) / (tf + norm)
                    scores[chunk_id] = scores.get(chunk_id, 0.0) + weight
    return scores


def test_the_stored_weights_give_the_bm25_score(manual):
    from django.db import connection

    query_words = {"server": 1.7, "pg_dumpall": 3.1}
    texts = [c.text for c in Chunk.objects.all()]
    mean = sum(map(len, texts)) / len(texts)
    text_search.bm25_refresh(tolerance=0.0)  # every chunk normalised with today's mean
    expected = _reference_bm25({c.id: c.text for c in Chunk.objects.all()}, query_words, mean=mean)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, -(bm25 <#> %s::sparsevec) FROM ragapp_chunk",
            [text_search.query_vector(query_words)],
        )
        stored = {chunk_id: score for chunk_id, score in cursor.fetchall() if score}
    assert stored.keys() == expected.keys() == {manual["common"].id, manual["rare"].id}
    for chunk_id, score in expected.items():
        assert stored[chunk_id] == pytest.approx(score, rel=1e-5)  # float32 storage


def test_python_and_postgresql_hash_a_term_alike(manual):
    from django.db import connection

    words = ["server", "pg_dumpall", "пароль", "密码", "x"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT t, rag_bm25_term(t) FROM unnest(%s::text[]) t", [words])
        assert dict(cursor.fetchall()) == {w: text_search.term_index(w) for w in words}


def _means():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT bm25_mean_chars FROM ragapp_chunk")
        return {round(row[0], 3) for row in cursor.fetchall()}


def test_weights_are_renormalised_only_when_the_mean_length_moves(manual):
    text_search.bm25_refresh(tolerance=0.0)
    [mean] = _means()
    document = manual["rare"].document
    # A chunk of about the mean length moves the mean by little: nothing is rewritten.
    _add(document, 50, "x" * round(mean))
    assert text_search.bm25_refresh() == 0
    # Long chunks move it by far more than the tolerance: every chunk gets the new mean.
    for n in range(51, 60):
        _add(document, n, "Appendix " + "lorem ipsum dolor " * 30)
    assert text_search.bm25_refresh() == Chunk.objects.count()
    [new_mean] = _means()
    assert new_mean == pytest.approx(sum(len(c.text) for c in Chunk.objects.all()) / 22, 1e-3)
