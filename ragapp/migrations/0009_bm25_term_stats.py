"""BM25's corpus statistics as tables, kept by statement triggers (issue 19).

Hand-written, like 0006. Nothing is re-embedded and no chunk is rewritten: the statistics are
counted once from the stored `search_vector`s.

Until now a query's idf counted each of its words' chunks through the GIN index and the heap
(5-10 ms per word at 100k chunks, growing with the table) and cached the counts for five
minutes. Now:

- `ragapp_bm25_term` (lexeme, chunks) holds how many chunks contain each lexeme;
- `ragapp_bm25_collection` (one row) holds how many chunks there are.

Statement-level `AFTER` triggers with transition tables keep both exact on every insert, delete
and update of `ragapp_chunk` (and reset them on TRUNCATE), in the writer's own transaction: a
reader sees the statistics of the chunks it can see, and a rolled-back ingest leaves them as
they were. One statement that stores a document's chunks pays one aggregate over them and one
upsert per distinct lexeme (docs/performance.md has the measured cost). Lexemes are upserted in
lexeme order and the collection row is always updated first, so two concurrent writers take
their locks in the same order and cannot deadlock; they do queue on the collection row until
the first commits, which an ingest (one short transaction per document) barely notices.

A lexeme whose count falls to zero keeps its row (count 0): deleting it would need a second
pass, and a search treats 0 as absent.
"""

from django.db import migrations

TABLES = """
CREATE TABLE ragapp_bm25_term (
    lexeme text PRIMARY KEY,
    chunks integer NOT NULL  -- no CHECK: an upsert proposes negative deltas
);
CREATE TABLE ragapp_bm25_collection (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    chunks bigint NOT NULL CHECK (chunks >= 0)
);
"""

# Deltas are (lexeme, +/- chunks) pairs; one upsert applies them in lexeme order.
FUNCTIONS = r"""
CREATE FUNCTION rag_bm25_stats_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows) THEN
        RETURN NULL;  -- no lock on the collection row for an empty statement
    END IF;
    UPDATE ragapp_bm25_collection SET chunks = chunks + (SELECT count(*) FROM new_rows);
    INSERT INTO ragapp_bm25_term AS t (lexeme, chunks)
    SELECT u.lexeme, count(*) FROM new_rows n, unnest(n.search_vector) u
    GROUP BY u.lexeme ORDER BY u.lexeme
    ON CONFLICT (lexeme) DO UPDATE SET chunks = t.chunks + excluded.chunks;
    RETURN NULL;
END
$$;

CREATE FUNCTION rag_bm25_stats_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM old_rows) THEN
        RETURN NULL;
    END IF;
    UPDATE ragapp_bm25_collection SET chunks = chunks - (SELECT count(*) FROM old_rows);
    INSERT INTO ragapp_bm25_term AS t (lexeme, chunks)
    SELECT u.lexeme, -count(*) FROM old_rows o, unnest(o.search_vector) u
    GROUP BY u.lexeme ORDER BY u.lexeme
    ON CONFLICT (lexeme) DO UPDATE SET chunks = t.chunks + excluded.chunks;
    RETURN NULL;
END
$$;

CREATE FUNCTION rag_bm25_stats_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- The collection row first, as the other writers take it: their locks on words then
    -- always come in the same order, so no two writers deadlock.
    PERFORM 1 FROM ragapp_bm25_collection FOR UPDATE;
    -- Only rows whose text changed move the counts (a re-embed or a BM25 refresh does not).
    INSERT INTO ragapp_bm25_term AS t (lexeme, chunks)
    SELECT lexeme, sum(delta) FROM (
        SELECT u.lexeme, 1 AS delta
        FROM old_rows o JOIN new_rows n USING (id), unnest(n.search_vector) u
        WHERE o.search_vector IS DISTINCT FROM n.search_vector
        UNION ALL
        SELECT u.lexeme, -1
        FROM old_rows o JOIN new_rows n USING (id), unnest(o.search_vector) u
        WHERE o.search_vector IS DISTINCT FROM n.search_vector
    ) d
    GROUP BY lexeme HAVING sum(delta) <> 0 ORDER BY lexeme
    ON CONFLICT (lexeme) DO UPDATE SET chunks = t.chunks + excluded.chunks;
    RETURN NULL;
END
$$;

CREATE FUNCTION rag_bm25_stats_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM ragapp_bm25_term;
    UPDATE ragapp_bm25_collection SET chunks = 0;
    RETURN NULL;
END
$$;
"""

BACKFILL = """
INSERT INTO ragapp_bm25_collection (chunks) SELECT count(*) FROM ragapp_chunk;
INSERT INTO ragapp_bm25_term (lexeme, chunks)
SELECT u.lexeme, count(*) FROM ragapp_chunk c, unnest(c.search_vector) u GROUP BY u.lexeme;
"""

TRIGGERS = """
CREATE TRIGGER ragapp_chunk_bm25_inserted AFTER INSERT ON ragapp_chunk
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION rag_bm25_stats_inserted();
CREATE TRIGGER ragapp_chunk_bm25_deleted AFTER DELETE ON ragapp_chunk
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION rag_bm25_stats_deleted();
CREATE TRIGGER ragapp_chunk_bm25_updated AFTER UPDATE ON ragapp_chunk
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION rag_bm25_stats_updated();
CREATE TRIGGER ragapp_chunk_bm25_truncated AFTER TRUNCATE ON ragapp_chunk
FOR EACH STATEMENT EXECUTE FUNCTION rag_bm25_stats_truncated();
"""

REVERSE = """
DROP TRIGGER IF EXISTS ragapp_chunk_bm25_inserted ON ragapp_chunk;
DROP TRIGGER IF EXISTS ragapp_chunk_bm25_deleted ON ragapp_chunk;
DROP TRIGGER IF EXISTS ragapp_chunk_bm25_updated ON ragapp_chunk;
DROP TRIGGER IF EXISTS ragapp_chunk_bm25_truncated ON ragapp_chunk;
DROP FUNCTION IF EXISTS rag_bm25_stats_inserted();
DROP FUNCTION IF EXISTS rag_bm25_stats_deleted();
DROP FUNCTION IF EXISTS rag_bm25_stats_updated();
DROP FUNCTION IF EXISTS rag_bm25_stats_truncated();
DROP TABLE IF EXISTS ragapp_bm25_term;
DROP TABLE IF EXISTS ragapp_bm25_collection;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("ragapp", "0008_reuse"),
    ]

    operations = [
        migrations.RunSQL(TABLES + FUNCTIONS + BACKFILL + TRIGGERS, reverse_sql=REVERSE),
    ]
