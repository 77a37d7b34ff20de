"""Full-text ranking with BM25: each chunk's term weights are a pgvector `sparsevec`.

PostgreSQL's own `ts_rank` has no inverse document frequency: "server" in a question about the
server weighs as much as "pg_dumpall", so on a manual where every page says "server" the rare,
telling word is drowned. BM25 weighs each word by how rare it is among the chunks. Fused with
vector search (weight 0.35) it raised MRR@10 on the PostgreSQL golden set from 0.742 to 0.773;
on this documentation and on Django's it moved MRR@10 by about one question (0.876 to 0.872,
0.769 to 0.755), with recall@5 unchanged or better (docs/evaluation.md).

BM25 splits into a document side and a query side. The document side (term-frequency
saturation, length normalisation against the mean chunk length) is stored per chunk in the
`bm25` column, computed by a trigger from the same `english` tsvector as `search_vector`, with
each lexeme hashed to a term id (migration 0006). The query side is the idf of each of the
question's lexemes, sent as a sparse vector; the inner product of the two is the BM25 score.
Computing the score that way, instead of unnesting each candidate's tsvector, made the text half
several times faster (docs/performance.md). Corpus statistics are kept right so:

- idf comes from two small tables, how many chunks hold each lexeme and how many chunks there
  are, which statement triggers keep exact in every writer's transaction (migration 0009): one
  index lookup per query word, where counting a word's chunks through the GIN index and the
  heap cost 5-10 ms a word at 100k chunks and grew with the table;
- a frequent word's best chunks are kept in a champion list by the same triggers (migration
  0010), so a search need not score every chunk holding it (`bm25_chunks` has the rule);
- the mean length is in the stored weights: new chunks use the mean the newest chunk was
  written with, and `bm25_refresh` (after each ingest run) rewrites the weights of every chunk
  only when the corpus's mean has moved by more than MEAN_TOLERANCE.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from itertools import combinations

from django.db import connection

from ragapp.models import Chunk

# BM25's usual constants: term-frequency saturation and length normalisation. They live in the
# SQL function rag_bm25_document (migration 0006), which computes the stored weights; a test
# checks the two agree.
K1 = 1.2
B = 0.75
# A word in a chunk's heading path (tsvector weight A) counts this many times: the heading
# names what the chunk is about.
HEADING_BOOST = 2.0
# The sparse vectors' size: term ids are hashes into it (pgvector's largest sparsevec).
TERM_DIMENSIONS = 1_000_000_000
# Stored weights are re-normalised when the corpus's mean chunk length moves by more than this
# share of it. The ranking is sensitive to it: with the mean 10 % off, the hybrid top 10 agreed
# 0.958 with exact BM25's at 100k synthetic chunks, 0.998 with it right (bench/retrieval.py).
# A corpus chunked at one RAG_CHUNK_SIZE keeps its mean within a few percent as it grows.
MEAN_TOLERANCE = 0.02
# A word in more than this share of the chunks does not select candidates by itself (it still
# scores the candidates the rarer words find): on a large knowledge base "database" would
# otherwise make every query rank most of the table.
COMMON_SHARE = 0.2


@dataclass(frozen=True)
class QueryTerms:
    """A query's lexemes with how many chunks hold each, and how many chunks there are.

    `depths` says, for each lexeme, how many of its chunks of highest weight its champion list
    is sure to hold (0: it has none); a lexeme held by more than `champion_min_chunks` chunks
    has one (migration 0010).
    """

    frequencies: dict[str, int]
    chunks: int
    depths: dict[str, int] = field(default_factory=dict)
    champion_min_chunks: int = 0


def query_terms(query: str) -> QueryTerms:
    """The query's words as the index stores them (parsed, stemmed, no stop words), counted.

    One statement: the words, each one's count and champion depth from `ragapp_bm25_term` (0
    when no chunk holds it) and the collection's size, all as of this transaction's snapshot.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT u.lexeme, coalesce(t.chunks, 0), coalesce(t.champion_depth, 0), c.chunks,
                   c.champion_min_chunks
            FROM unnest(to_tsvector('english', %s)) u
            LEFT JOIN ragapp_bm25_term t ON t.lexeme = u.lexeme
            CROSS JOIN ragapp_bm25_collection c
            ORDER BY u.lexeme
            """,
            [query],
        )
        rows = cursor.fetchall()
    if not rows:
        return QueryTerms({}, 0)
    return QueryTerms(
        frequencies={row[0]: int(row[1]) for row in rows},
        chunks=int(rows[0][3]),
        depths={row[0]: int(row[2]) for row in rows},
        champion_min_chunks=int(rows[0][4]),
    )


def idf(frequency: int, chunks: int) -> float:
    """BM25's inverse document frequency (the non-negative form Lucene uses)."""
    return math.log(1 + (chunks - frequency + 0.5) / (frequency + 0.5))


def term_index(lexeme: str) -> int:
    """A lexeme's dimension in the `bm25` sparse vectors (the SQL function rag_bm25_term)."""
    return int(hashlib.md5(lexeme.encode()).hexdigest()[:8], 16) % TERM_DIMENSIONS + 1


def query_vector(weights: dict[str, float]) -> str:
    """The query's idf weights as a sparsevec literal; its inner product with `bm25` is BM25."""
    summed: dict[int, float] = {}
    for lexeme, weight in weights.items():
        # Two lexemes on one id (about one pair in 10^9/vocabulary) share it, as documents do.
        summed[term_index(lexeme)] = summed.get(term_index(lexeme), 0.0) + weight
    items = ",".join(f"{i}:{w:.6g}" for i, w in sorted(summed.items()))
    return f"{{{items}}}/{TERM_DIMENSIONS}"


def bm25_chunk_ids(query: str, *, limit: int) -> list[int]:
    """The ids of the `limit` chunks that BM25 ranks highest for `query`, best first."""
    return [chunk_id for chunk_id, _ in bm25_chunks(query, limit=limit)]


def bm25_chunks(query: str, *, limit: int) -> list[tuple[int, int]]:
    """(chunk id, document id) of the `limit` chunks BM25 ranks highest for `query`, best first.

    The document id comes along (it is on the row the score is read from anyway) so that a
    hybrid search can fuse and cap per document before it reads any chunk's text.
    """
    terms = query_terms(query)
    frequencies, chunks = terms.frequencies, terms.chunks
    present = [t for t, n in frequencies.items() if n > 0]
    if not present or not chunks:
        return []
    weights = {t: idf(frequencies[t], chunks) for t in present}
    selective = [t for t in present if frequencies[t] <= COMMON_SHARE * chunks]
    # Only common words in the query: they are all it has, so they must select.
    selecting = selective or present
    # A frequent word's candidates are its champion list, if the list is deep enough, and the
    # chunks holding it with another frequent word; a chunk holding it alone and not on the
    # list cannot make the top `limit` (migration 0010 has the argument). The argument needs
    # every word that scores to select too: a common word adds to a chunk's score without
    # making it a candidate, so a query with one is scored over all the chunks of its words.
    listed = [
        t
        for t in selecting
        if len(selecting) == len(present)
        and frequencies[t] > terms.champion_min_chunks
        and terms.depths.get(t, 0) >= limit
    ]
    scanned = [t for t in selecting if t not in listed]
    left, right = zip(*combinations(listed, 2), strict=True) if len(listed) > 1 else ((), ())
    params = {
        "scanned": scanned,
        "left": list(left),
        "right": list(right),
        "listed": listed,
        "query": query_vector(weights),
        "limit": limit,
    }
    # The GIN index finds the candidates; each one's score is then one inner product with its
    # stored weights (`<#>` is the negative inner product, so ascending is best first).
    matching = f"""
        SELECT id, document_id, bm25 <#> %(query)s::sparsevec AS distance FROM {_table()}
        WHERE search_vector @@ array_to_string(ARRAY(
            SELECT quote_literal(t) FROM unnest(%(scanned)s::text[]) AS t
            UNION ALL
            SELECT '(' || quote_literal(a) || ' & ' || quote_literal(b) || ')'
            FROM unnest(%(left)s::text[], %(right)s::text[]) AS p(a, b)
        ), ' | ')::tsquery
    """
    # Each list's best `limit` entries are its word's top `limit` chunks (it holds at least
    # that many of them, and they outweigh the rest of it).
    champions = f"""
        SELECT c.id, c.document_id, c.bm25 <#> %(query)s::sparsevec AS distance
        FROM unnest(%(listed)s::text[]) AS w(lexeme)
        CROSS JOIN LATERAL (
            SELECT h.chunk_id FROM ragapp_bm25_champion h WHERE h.lexeme = w.lexeme
            ORDER BY h.weight DESC, h.chunk_id LIMIT %(limit)s
        ) best
        JOIN {_table()} c ON c.id = best.chunk_id
    """
    if not listed:
        sql = f"{matching} ORDER BY distance, id LIMIT %(limit)s"
    else:
        branches = [champions] + ([matching] if scanned or len(listed) > 1 else [])
        sql = (
            f"SELECT id, document_id FROM ({' UNION ALL '.join(branches)}) candidates "
            "GROUP BY id, document_id ORDER BY min(distance), id LIMIT %(limit)s"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(row[0], row[1]) for row in cursor.fetchall()]


def bm25_refresh(*, tolerance: float = MEAN_TOLERANCE) -> int:
    """Re-normalise the chunks whose weights used a mean length off by more than `tolerance`.

    Returns how many chunks were rewritten. Ingestion calls it after each run that stored or
    deleted documents: one pass over the table, which rewrites rows only when the corpus's mean
    chunk length has moved (or for chunks written before any mean was known).
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {_table()} SET bm25_mean_chars = m.mean
            FROM (SELECT avg(length(text))::float8 AS mean FROM {_table()}) m
            WHERE abs(bm25_mean_chars - m.mean) > %s * m.mean
            """,
            [tolerance],
        )
        return cursor.rowcount


def _table() -> str:
    return connection.ops.quote_name(Chunk._meta.db_table)
