"""Champion lists: each frequent word's best chunks, so a BM25 search need not score them all.

Hand-written, like 0006 and 0009. Nothing is re-embedded and no chunk is rewritten.

At a million chunks the BM25 half scored every chunk holding any of the query's words: a word in
0.8 % of the chunks is 8,000 candidates, and three such words cost 89 ms (docs/performance.md).
But a chunk that holds only one of the query's words scores idf(word) x its stored weight for
that word, so it can only be among the top `limit` if fewer than `limit` chunks have a higher
weight for that word. Hence, exactly (ties aside):

    top `limit` by BM25 = the best of
        the chunks holding a rare query word (found through the GIN index, as before),
        the chunks holding two or more of the frequent query words (GIN, pairs of words), and
        each frequent query word's champion list, if it holds the word's top `limit` chunks.

A word is frequent when more than `champion_min_chunks` chunks hold it (1,000). Its list
(`ragapp_bm25_champion`) holds at least its `champion_depth` chunks of highest weight, and at
most `champion_capacity` (200) entries; a search relies on a list only when its depth is at
least the rows it asks for. The numbers live in `ragapp_bm25_collection` and
`ragapp_bm25_term`, so SQL and Python read the same ones (tests lower them).

The statement triggers of 0009, and one more after its update trigger, keep the lists right in
the writer's transaction:

- insert: a new chunk joins the list of each of its words where it outranks the last entry (or
  the list may hold all the word's chunks), and the list is cut back to its capacity (it still
  holds its top `depth`, which are its best entries); a word that has just become frequent
  gets a list built from every chunk holding it, at depth 200;
- delete: each deleted chunk leaves its lists, and lowers the depth of those where it was among
  the top `depth` entries by one; a list whose depth falls under `champions` (100) is rebuilt.
  Deleting a document therefore rarely costs a rebuild (a scan of the word's chunks);
- update: the lists of the words of every row whose words or length normalisation changed are
  rebuilt (an edit, or `bm25_refresh`, which then rebuilds them all);
- truncate: the lists go.

A list is kept when its word falls back below the threshold: kept right, it does no harm.
"""

import importlib

from django.db import migrations

TABLES = """
ALTER TABLE ragapp_bm25_collection
    ADD COLUMN champion_min_chunks integer NOT NULL DEFAULT 1000,
    ADD COLUMN champions integer NOT NULL DEFAULT 100,
    ADD COLUMN champion_capacity integer NOT NULL DEFAULT 200;
ALTER TABLE ragapp_bm25_term ADD COLUMN champion_depth integer NOT NULL DEFAULT 0;
CREATE TABLE ragapp_bm25_champion (
    lexeme text NOT NULL,
    chunk_id bigint NOT NULL,
    weight float8 NOT NULL,
    PRIMARY KEY (lexeme, chunk_id)
);
CREATE INDEX ragapp_bm25_champion_chunk ON ragapp_bm25_champion (chunk_id);
-- A search reads each list's best `limit` entries, in the order of this index.
CREATE INDEX ragapp_bm25_champion_rank ON ragapp_bm25_champion (lexeme, weight DESC, chunk_id);
"""

FUNCTIONS = r"""
-- A word's weight in a chunk's stored BM25 vector: its inner product with the word's unit vector.
CREATE FUNCTION rag_bm25_weight(weights sparsevec, lexeme text) RETURNS float8
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT -(weights <#> ('{' || rag_bm25_term(lexeme) || ':1}/1000000000')::sparsevec)
$$;

-- Each of `lexemes`' list built afresh from every chunk that holds it, in lexeme order.
CREATE FUNCTION rag_bm25_champions_rebuild(lexemes text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    capacity integer;
    word text;
    unit sparsevec;
BEGIN
    SELECT champion_capacity INTO capacity FROM ragapp_bm25_collection;
    DELETE FROM ragapp_bm25_champion WHERE lexeme = ANY(lexemes);
    FOR word IN SELECT DISTINCT l FROM unnest(lexemes) AS l ORDER BY l LOOP
        unit := ('{' || rag_bm25_term(word) || ':1}/1000000000')::sparsevec;
        INSERT INTO ragapp_bm25_champion (lexeme, chunk_id, weight)
        SELECT word, c.id, -(c.bm25 <#> unit) AS w FROM ragapp_chunk c
        WHERE c.search_vector @@ quote_literal(word)::tsquery
        ORDER BY w DESC, c.id LIMIT capacity;
        UPDATE ragapp_bm25_term SET champion_depth = capacity WHERE lexeme = word;
    END LOOP;
END
$$;

-- Of `words`, those that have a list or that more than the threshold of chunks now hold.
CREATE FUNCTION rag_bm25_championed(words text[]) RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(t.lexeme ORDER BY t.lexeme), '{}') FROM ragapp_bm25_term t
    WHERE t.lexeme = ANY(words) AND (
        t.champion_depth > 0
        OR t.chunks > (SELECT champion_min_chunks FROM ragapp_bm25_collection)
    )
$$;

CREATE OR REPLACE FUNCTION rag_bm25_stats_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    fresh text[];
    kept text[];
    grown text[];
    minimum integer;
    capacity integer;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows) THEN
        RETURN NULL;  -- no lock on the collection row for an empty statement
    END IF;
    UPDATE ragapp_bm25_collection SET chunks = chunks + (SELECT count(*) FROM new_rows)
    RETURNING champion_min_chunks, champion_capacity INTO minimum, capacity;
    INSERT INTO ragapp_bm25_term AS t (lexeme, chunks)
    SELECT u.lexeme, count(*) FROM new_rows n, unnest(n.search_vector) u
    GROUP BY u.lexeme ORDER BY u.lexeme
    ON CONFLICT (lexeme) DO UPDATE SET chunks = t.chunks + excluded.chunks;

    -- Champion lists: words that have one take the new chunks (then cut to capacity);
    -- words that have just become frequent get one built.
    SELECT coalesce(array_agg(t.lexeme ORDER BY t.lexeme) FILTER (WHERE t.champion_depth > 0), '{}'),
           coalesce(array_agg(t.lexeme ORDER BY t.lexeme) FILTER (WHERE t.champion_depth = 0), '{}')
    INTO kept, fresh
    FROM ragapp_bm25_term t
    WHERE t.lexeme IN (SELECT u.lexeme FROM new_rows n, unnest(n.search_vector) u)
      AND (t.champion_depth > 0 OR t.chunks > minimum);
    IF cardinality(fresh) > 0 THEN
        PERFORM rag_bm25_champions_rebuild(fresh);
    END IF;
    IF cardinality(kept) > 0 THEN
        -- A new chunk joins a list only if it outranks the list's last entry (weight, then id,
        -- as the lists are ordered), or if the list may hold every chunk of its word: on a
        -- large table most do neither. One that does not cannot be among the word's top
        -- `depth`, which all outrank the last entry or are it.
        WITH lists AS (
            SELECT t.lexeme,
                   t.chunks - coalesce(a.added, 0) < capacity AS room,
                   (SELECT row(h.weight, -h.chunk_id) FROM ragapp_bm25_champion h
                    WHERE h.lexeme = t.lexeme ORDER BY h.weight, h.chunk_id DESC LIMIT 1) AS last
            FROM ragapp_bm25_term t
            LEFT JOIN (
                SELECT u.lexeme, count(*) AS added FROM new_rows n, unnest(n.search_vector) u
                WHERE u.lexeme = ANY(kept) GROUP BY u.lexeme
            ) a ON a.lexeme = t.lexeme
            WHERE t.lexeme = ANY(kept)
        ), joined AS (
            INSERT INTO ragapp_bm25_champion (lexeme, chunk_id, weight)
            SELECT o.lexeme, o.id, o.weight FROM (
                SELECT u.lexeme, n.id, rag_bm25_weight(n.bm25, u.lexeme) AS weight
                FROM new_rows n, unnest(n.search_vector) u WHERE u.lexeme = ANY(kept)
            ) o JOIN lists l ON l.lexeme = o.lexeme
            WHERE l.room OR l.last IS NULL OR row(o.weight, -o.id) > l.last
            ORDER BY o.lexeme, o.id
            ON CONFLICT DO NOTHING
            RETURNING lexeme
        )
        SELECT array_agg(DISTINCT lexeme) INTO grown FROM joined;
        IF grown IS NOT NULL THEN
            -- Lists over capacity lose their last entries (never one of their top `depth`):
            -- each list is read in its index's order, past its first `capacity` entries.
            DELETE FROM ragapp_bm25_champion h USING (
                SELECT g.lexeme, x.chunk_id FROM unnest(grown) AS g(lexeme)
                CROSS JOIN LATERAL (
                    SELECT a.chunk_id FROM ragapp_bm25_champion a WHERE a.lexeme = g.lexeme
                    ORDER BY a.weight DESC, a.chunk_id OFFSET capacity
                ) x
            ) extra
            WHERE h.lexeme = extra.lexeme AND h.chunk_id = extra.chunk_id;
        END IF;
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION rag_bm25_stats_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    shallow text[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM old_rows) THEN
        RETURN NULL;
    END IF;
    UPDATE ragapp_bm25_collection SET chunks = chunks - (SELECT count(*) FROM old_rows);
    INSERT INTO ragapp_bm25_term AS t (lexeme, chunks)
    SELECT u.lexeme, -count(*) FROM old_rows o, unnest(o.search_vector) u
    GROUP BY u.lexeme ORDER BY u.lexeme
    ON CONFLICT (lexeme) DO UPDATE SET chunks = t.chunks + excluded.chunks;
    -- Each deleted chunk leaves its lists; one that was among a list's top `depth` entries
    -- lowers that depth by one (the rest of the list still holds the top `depth - 1` of the
    -- chunks left). A list left shallower than `champions` is rebuilt from its word's chunks.
    WITH doomed AS (
        SELECT h.lexeme, h.chunk_id, (
            SELECT count(*) FROM ragapp_bm25_champion a
            WHERE a.lexeme = h.lexeme
              AND (a.weight > h.weight OR (a.weight = h.weight AND a.chunk_id < h.chunk_id))
        ) AS ahead
        FROM ragapp_bm25_champion h JOIN old_rows o ON o.id = h.chunk_id
    ), gone AS (
        DELETE FROM ragapp_bm25_champion h USING doomed d
        WHERE h.lexeme = d.lexeme AND h.chunk_id = d.chunk_id
    ), lowered AS (
        UPDATE ragapp_bm25_term t SET champion_depth = t.champion_depth - g.n
        FROM (
            SELECT d.lexeme, count(*) AS n FROM doomed d
            JOIN ragapp_bm25_term w ON w.lexeme = d.lexeme
            WHERE d.ahead < w.champion_depth GROUP BY d.lexeme
        ) g
        WHERE t.lexeme = g.lexeme
        RETURNING t.lexeme, t.champion_depth
    )
    SELECT array_agg(lexeme ORDER BY lexeme) INTO shallow FROM lowered
    WHERE champion_depth < (SELECT champions FROM ragapp_bm25_collection);
    IF shallow IS NOT NULL THEN
        PERFORM rag_bm25_champions_rebuild(shallow);
    END IF;
    RETURN NULL;
END
$$;

-- After 0009's counting trigger on the same statement (triggers fire in name order), which has
-- taken the collection row and brought the counts up to date.
CREATE FUNCTION rag_bm25_lists_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    touched text[];
BEGIN
    -- Lists move with words and with weights (bm25_refresh rewrites every row's weights).
    SELECT array_agg(DISTINCT w.lexeme) INTO touched FROM (
        SELECT u.lexeme FROM old_rows o JOIN new_rows n USING (id), unnest(o.search_vector) u
        WHERE o.search_vector IS DISTINCT FROM n.search_vector
           OR o.bm25_mean_chars IS DISTINCT FROM n.bm25_mean_chars
        UNION
        SELECT u.lexeme FROM old_rows o JOIN new_rows n USING (id), unnest(n.search_vector) u
        WHERE o.search_vector IS DISTINCT FROM n.search_vector
           OR o.bm25_mean_chars IS DISTINCT FROM n.bm25_mean_chars
    ) w;
    IF touched IS NOT NULL THEN
        touched := rag_bm25_championed(touched);
        IF cardinality(touched) > 0 THEN
            PERFORM rag_bm25_champions_rebuild(touched);
        END IF;
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION rag_bm25_stats_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM ragapp_bm25_term;
    DELETE FROM ragapp_bm25_champion;
    UPDATE ragapp_bm25_collection SET chunks = 0;
    RETURN NULL;
END
$$;
"""

TRIGGERS = """
CREATE TRIGGER ragapp_chunk_bm25_updated_lists AFTER UPDATE ON ragapp_chunk
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION rag_bm25_lists_updated();
"""

BACKFILL = """
SELECT rag_bm25_champions_rebuild(ARRAY(
    SELECT lexeme FROM ragapp_bm25_term
    WHERE chunks > (SELECT champion_min_chunks FROM ragapp_bm25_collection)
));
"""

# The way back: the lists go, and the trigger functions return to their 0009 versions.
_STATS = importlib.import_module("ragapp.migrations.0009_bm25_term_stats")
REVERSE = (
    """
DROP TRIGGER IF EXISTS ragapp_chunk_bm25_updated_lists ON ragapp_chunk;
DROP TABLE IF EXISTS ragapp_bm25_champion;
ALTER TABLE ragapp_bm25_collection
    DROP COLUMN champion_min_chunks, DROP COLUMN champions, DROP COLUMN champion_capacity;
ALTER TABLE ragapp_bm25_term DROP COLUMN champion_depth;
"""
    + _STATS.FUNCTIONS.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")
    + """
DROP FUNCTION IF EXISTS rag_bm25_lists_updated();
DROP FUNCTION IF EXISTS rag_bm25_championed(text[]);
DROP FUNCTION IF EXISTS rag_bm25_champions_rebuild(text[]);
DROP FUNCTION IF EXISTS rag_bm25_weight(sparsevec, text);
"""
)


class Migration(migrations.Migration):
    dependencies = [
        ("ragapp", "0009_bm25_term_stats"),
    ]

    operations = [
        migrations.RunSQL(TABLES + FUNCTIONS + TRIGGERS + BACKFILL, reverse_sql=REVERSE),
    ]
