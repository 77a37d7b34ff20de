"""Full-text ranking with BM25 over PostgreSQL's tsvectors.

PostgreSQL's own `ts_rank` has no inverse document frequency: "server" in a question about the
server weighs as much as "pg_dumpall", so on a manual where every page says "server" the rare,
telling word is drowned. BM25 weighs each word by how rare it is among the chunks. Fused with
vector search (weight 0.35) it raised MRR@10 on the PostgreSQL golden set from 0.742 to 0.773;
on this documentation and on Django's it moved MRR@10 by about one question (0.876 to 0.872,
0.769 to 0.755), with recall@5 unchanged or better (docs/evaluation.md).

Everything runs in the database: the query's words go through the same `english` parser and
stemmer as the indexed text (`to_tsvector`), and the scores are summed over `unnest` of each
candidate's tsvector, so no chunk text leaves PostgreSQL.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from django.core.cache import cache
from django.db import connection

from ragapp.models import Chunk

logger = logging.getLogger(__name__)

# BM25's usual constants: term-frequency saturation and length normalisation.
K1 = 1.2
B = 0.75
# A word in a chunk's heading path (tsvector weight A) counts this many times: the heading
# names what the chunk is about.
HEADING_BOOST = 2.0
# A word in more than this share of the chunks does not select candidates by itself (it still
# scores the candidates the rarer words find): on a large knowledge base "database" would
# otherwise make every query rank most of the table.
COMMON_SHARE = 0.2
# Document frequencies and the collection's size change only with ingestion. They are cached
# under the newest chunk id, so an ingest that writes chunks starts afresh; deletions alone are
# seen within this many seconds, a staleness that moves no ranking measurably.
STATS_SECONDS = 300


@dataclass(frozen=True)
class CollectionStats:
    chunks: int
    mean_chars: float


def collection_version() -> int:
    """The newest chunk's id: it changes whenever ingestion writes chunks (an index lookup)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT coalesce(max(id), 0) FROM {_table()}")
        return cursor.fetchone()[0]


def collection_stats(version: int) -> CollectionStats:
    """How many chunks there are and their mean length in characters (cached)."""
    key = f"rag:bm25:{version}:collection"
    cached = _cached([key]).get(key)
    if cached is not None:
        return CollectionStats(*cached)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*), coalesce(avg(length(text)), 0) FROM {_table()}")
        chunks, mean = cursor.fetchone()
    stats = CollectionStats(int(chunks), float(mean))
    _cache({key: (stats.chunks, stats.mean_chars)})
    return stats


def query_lexemes(query: str) -> list[str]:
    """The query's words as the index stores them: parsed, stemmed, without stop words."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme FROM unnest(to_tsvector('english', %s)) ORDER BY lexeme", [query]
        )
        return [row[0] for row in cursor.fetchall()]


def document_frequencies(lexemes: list[str], version: int) -> dict[str, int]:
    """For each lexeme, how many chunks contain it (cached per lexeme)."""
    keys = {lexeme: f"rag:bm25:{version}:df:{lexeme.encode().hex()}" for lexeme in lexemes}
    found = _cached(list(keys.values()))
    frequencies = {lexeme: found[key] for lexeme, key in keys.items() if key in found}
    missing = [lexeme for lexeme in lexemes if lexeme not in frequencies]
    if missing:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT t, (SELECT count(*) FROM {_table()} WHERE search_vector @@ "
                "quote_literal(t)::tsquery) FROM unnest(%s::text[]) AS t",
                [missing],
            )
            fresh = dict(cursor.fetchall())
        _cache({keys[t]: n for t, n in fresh.items()})
        frequencies.update(fresh)
    return frequencies


def idf(frequency: int, chunks: int) -> float:
    """BM25's inverse document frequency (the non-negative form Lucene uses)."""
    return math.log(1 + (chunks - frequency + 0.5) / (frequency + 0.5))


def bm25_chunk_ids(query: str, *, limit: int) -> list[int]:
    """The ids of the `limit` chunks that BM25 ranks highest for `query`, best first."""
    lexemes = query_lexemes(query)
    if not lexemes:
        return []
    version = collection_version()
    stats = collection_stats(version)
    frequencies = document_frequencies(lexemes, version)
    present = [t for t in lexemes if frequencies.get(t)]
    if not present or not stats.chunks:
        return []
    weights = [idf(frequencies[t], stats.chunks) for t in present]
    selective = [t for t in present if frequencies[t] <= COMMON_SHARE * stats.chunks]
    # Only common words in the query: they are all it has, so they must select.
    selecting = selective or present
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH q(lexeme, idf) AS (SELECT * FROM unnest(%(lexemes)s::text[], %(idf)s::float8[])),
            candidates AS (
                SELECT id, search_vector, length(text) AS chars FROM {_table()}
                WHERE search_vector @@ array_to_string(
                    ARRAY(SELECT quote_literal(t) FROM unnest(%(selecting)s::text[]) AS t), ' | '
                )::tsquery
            )
            SELECT c.id, sum(
                q.idf * f.tf * (%(k1)s + 1)
                / (f.tf + %(k1)s * (1 - %(b)s + %(b)s * c.chars / %(mean)s))
            ) AS score
            FROM candidates c
            CROSS JOIN LATERAL unnest(c.search_vector) AS u(lexeme, positions, weights)
            JOIN q ON q.lexeme = u.lexeme
            CROSS JOIN LATERAL (
                SELECT coalesce(cardinality(u.positions), 1)
                    + (%(boost)s - 1) * coalesce(cardinality(array_positions(u.weights, 'A')), 0)
                    AS tf
            ) f
            GROUP BY c.id
            ORDER BY score DESC, c.id
            LIMIT %(limit)s
            """,
            {
                "lexemes": present,
                "idf": weights,
                "selecting": selecting,
                "k1": K1,
                "b": B,
                "mean": max(stats.mean_chars, 1.0),
                "boost": HEADING_BOOST,
                "limit": limit,
            },
        )
        return [row[0] for row in cursor.fetchall()]


def _cached(keys: list[str]) -> dict:
    # The cache only saves queries: with Redis down, search carries on and counts afresh.
    try:
        return cache.get_many(keys)
    except Exception:  # any cache backend's outage
        logger.debug("BM25 statistics cache unavailable", exc_info=True)
        return {}


def _cache(values: dict) -> None:
    try:
        cache.set_many(values, STATS_SECONDS)
    except Exception:  # any cache backend's outage
        logger.debug("BM25 statistics cache unavailable", exc_info=True)


def _table() -> str:
    return connection.ops.quote_name(Chunk._meta.db_table)
