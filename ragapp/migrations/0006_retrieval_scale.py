"""Retrieval at scale (issue 19): BM25 weights as a sparse vector, and a half-precision HNSW index.

Hand-written. Nothing here is re-embedded: the new columns are computed from each chunk's text,
and the HNSW index is rebuilt from the stored vectors.

- `bm25` (sparsevec) holds each chunk's BM25 term weights (hashed term ids; term-frequency
  saturation and length normalisation already applied), so a full-text score is one inner
  product with the query's idf weights. `bm25_mean_chars` is the mean chunk length the weights
  were normalised with. A trigger computes both on every insert and on every change of the text,
  so every writer (ingestion, re-embeds, tests, the admin) gets them without knowing they exist.
  Neither column is in the Django model: nothing reads them into Python, and only the SQL of
  `ragapp/retrieval/text_search.py` uses them, as only the search SQL uses the HNSW index.
- The HNSW index moves from `vector(N)` to `halfvec(N)` (16-bit floats): half the index size
  with the same recall at 10k and 100k chunks (docs/performance.md). The column stays `vector`.

On a large knowledge base this migration takes a while: it computes every chunk's weights and
rebuilds the HNSW index (the index is dropped first, so the weights' update does not re-insert
every row into it). bench/retrieval.py measured the two parts at about 60 s and 25 s for 100k
chunks on two busy cores; expect ten times that at 1M.
"""

from django.db import migrations

# The weights must match ragapp/retrieval/text_search.py: K1 = 1.2, B = 0.75, HEADING_BOOST = 2
# (tests/ragapp/retrieval/test_text_search.py checks the scores against a BM25 computed there).
# Term ids: the first 32 bits of the lexeme's md5, mod 10^9, plus 1 (sparsevec indices start
# at 1). md5 rather than hashtext(): the same on every PostgreSQL version and platform, and
# Python can compute it too (text_search.term_index).
FUNCTIONS = r"""
CREATE FUNCTION rag_bm25_term(lexeme text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT (('x' || substr(md5(lexeme), 1, 8))::bit(32)::bigint & 4294967295) % 1000000000 + 1
$$;

CREATE FUNCTION rag_bm25_document(document tsvector, chars integer, mean_chars float8)
RETURNS sparsevec
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(
        ('{' || string_agg(term || ':' || weight, ',') || '}/1000000000')::sparsevec,
        '{}/1000000000'::sparsevec
    )
    FROM (
        SELECT rag_bm25_term(u.lexeme) AS term,
               sum(f.tf * 2.2 / (f.tf + 1.2 * (0.25 + 0.75 * chars / greatest(mean_chars, 1.0))))
                   AS weight
        FROM unnest(document) AS u(lexeme, positions, weights)
        CROSS JOIN LATERAL (
            SELECT coalesce(cardinality(u.positions), 1)
                + coalesce(cardinality(array_positions(u.weights, 'A')), 0) AS tf
        ) f
        GROUP BY 1
    ) w
$$;

CREATE FUNCTION rag_chunk_bm25() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.bm25_mean_chars IS NULL THEN
        -- The newest chunk's mean is the current one: a refresh sets every row's.
        SELECT c.bm25_mean_chars INTO NEW.bm25_mean_chars FROM ragapp_chunk c
        WHERE c.bm25_mean_chars IS NOT NULL ORDER BY c.id DESC LIMIT 1;
        NEW.bm25_mean_chars := coalesce(NEW.bm25_mean_chars, length(NEW.text), 1);
    END IF;
    -- The same tsvector as the generated search_vector (computed after this trigger runs).
    NEW.bm25 := rag_bm25_document(
        setweight(to_tsvector('english'::regconfig, coalesce(NEW.heading_path, '')), 'A')
            || setweight(to_tsvector('english'::regconfig, coalesce(NEW.text, '')), 'B'),
        length(NEW.text),
        NEW.bm25_mean_chars
    );
    RETURN NEW;
END
$$;
"""

COLUMNS = """
DROP INDEX IF EXISTS chunk_embedding_hnsw;
ALTER TABLE ragapp_chunk ADD COLUMN bm25 sparsevec(1000000000), ADD COLUMN bm25_mean_chars float8;
"""

BACKFILL = """
UPDATE ragapp_chunk SET bm25_mean_chars = m.mean,
    bm25 = rag_bm25_document(search_vector, length(text), m.mean)
FROM (SELECT avg(length(text))::float8 AS mean FROM ragapp_chunk) m;
"""

TRIGGER = """
CREATE TRIGGER ragapp_chunk_bm25 BEFORE INSERT OR UPDATE OF text, heading_path, bm25_mean_chars
ON ragapp_chunk FOR EACH ROW EXECUTE FUNCTION rag_chunk_bm25();
"""

REVERSE = """
DROP TRIGGER IF EXISTS ragapp_chunk_bm25 ON ragapp_chunk;
ALTER TABLE ragapp_chunk DROP COLUMN IF EXISTS bm25, DROP COLUMN IF EXISTS bm25_mean_chars;
DROP FUNCTION IF EXISTS rag_chunk_bm25();
DROP FUNCTION IF EXISTS rag_bm25_document(tsvector, integer, float8);
DROP FUNCTION IF EXISTS rag_bm25_term(text);
"""

INDEX_NAME = "chunk_embedding_hnsw"


def _rebuild_hnsw(apps, schema_editor, kind):
    """Build the HNSW index with `kind` ('halfvec' or 'vector') if a model is recorded.

    The index is not created by a migration (the first ingest creates it for its model's
    dimension), so only a knowledge base with a recorded model gets it, from the stored vectors.
    """
    index = apps.get_model("ragapp", "EmbeddingIndex").objects.first()
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {INDEX_NAME}")
        if index is None:
            return
        cursor.execute(
            f"CREATE INDEX {INDEX_NAME} ON ragapp_chunk USING hnsw "
            f"((embedding::{kind}({int(index.dimensions)})) {kind}_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )


def forwards(apps, schema_editor):
    _rebuild_hnsw(apps, schema_editor, "halfvec")


def backwards(apps, schema_editor):
    _rebuild_hnsw(apps, schema_editor, "vector")


class Migration(migrations.Migration):
    dependencies = [
        ("ragapp", "0005_content_owners"),
    ]

    operations = [
        migrations.RunSQL(FUNCTIONS + COLUMNS + BACKFILL + TRIGGER, reverse_sql=REVERSE),
        migrations.RunPython(forwards, backwards),
    ]
