"""Retrieval latency and HNSW recall at 10k, 100k and 1M chunks (synthetic 384-dim vectors).

For each size it fills a throwaway embedded PostgreSQL with clustered unit vectors (like real
sentence embeddings, which crowd into topics) and chunk texts drawn from a word list (a page's
chunks share its topic: `--chunks-per-document` of one topic each), builds the HNSW index as
ingestion did before issue 19 (float32 `vector`), then times, over the same held-out queries:

- exact: a sequential scan ordered by cosine distance (the ground truth, and the baseline);
- hnsw: the product's vector retriever at several `hnsw.ef_search` values, with recall@10
  against exact;
- hybrid, today's: vector + BM25 computed by unnesting each candidate's tsvector, both
  candidate lists read as whole chunks through the ORM (the product's search before issue 19,
  kept here as `legacy_hybrid_ids` and `legacy_bm25_ids`), fused by weighted reciprocal ranks;
  each hybrid is timed on a first pass ("cold stats": the old statistics cache emptied,
  untimed, before every query, so today's counts each word's chunks; the product reads its
  statistics tables either way) and a second pass ("warm"), and its top 10 compared with
  today's and with the same fusion over the exact dense top 80 (`exact_fused_ids`);
- issue 19, in the same run: BM25 as an inner product with the stored `bm25` sparsevec (the
  product's method now; recall@10 against today's hybrid), with a deliberately wrong mean
  length too; vector search with iterative scans and ef_search following the table's size,
  with and without the one-chunk-per-document cap (recall against an exact capped scan); the
  `halfvec` index the product now builds, and binary quantization with re-ranking (size, build
  time, recall; `--builds` adds other builds); the BM25 half with and without champion lists
  (`--champion-min-chunks` lowers the threshold); 8 concurrent hybrid searches against one at
  a time; and documents written and deleted with the statistics triggers on and off;
- seed: the design article's approach, load `vectors.json` and brute-force cosine in Python on
  every query (only where it fits in memory and time).

Each line prints p50/p95 latency and the ratio of p50 to the exact scan measured in the same run.

    uv run python bench/retrieval.py --sizes 10000            # a quick look (a few minutes)
    uv run python bench/retrieval.py --sizes 10000,100000 --queries 50
    uv run python bench/retrieval.py                          # 10k, 100k, 1M (hours)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _django import throwaway_django

DIMS = 384
K = 10
WORDS = [f"w{n}" for n in range(5000)]
NOISE = 0.042
TOPIC_WORDS = 30  # each cluster has its own preferred words, so full-text search has signal


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def synthetic(n: int, clusters: int, rng: np.random.Generator):
    """Unit vectors around `clusters` centres, and texts mixing topic words with common ones."""
    centres = rng.standard_normal((clusters, DIMS)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    labels = rng.integers(0, clusters, n)
    # Noise of this size puts a chunk at cosine ~0.77 from its centre, as topics spread in MiniLM.
    vectors = centres[labels] + NOISE * rng.standard_normal((n, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return centres, labels, vectors


def topic_words(label: int) -> list[str]:
    start = (label * TOPIC_WORDS) % (len(WORDS) - TOPIC_WORDS)
    return WORDS[start : start + TOPIC_WORDS]


def text_for(label: int, rnd: random.Random) -> str:
    words = rnd.sample(topic_words(label), 8) + rnd.sample(WORDS, 32)
    rnd.shuffle(words)
    return " ".join(words)


def fill(n: int, vectors: np.ndarray, labels: np.ndarray, per_document: int) -> float:
    """COPY n chunks into the database, a document's chunks of one topic; returns seconds.

    The chunk table's triggers compute each chunk's BM25 weights and the term statistics as it
    is written, so the time includes what an ingest now pays for them. The weights use the
    texts' true mean length, as after an ingest's `bm25_refresh`: a load that left every row
    normalised with the first chunk's length would have the benchmark rewrite them all (about
    73 s at 100k chunks), which `--mean-errors` measures on its own.
    """
    from django.db import connection

    from ragapp.models import EmbeddingIndex

    EmbeddingIndex.objects.create(provider="bench", model="bench/synthetic-384", dimensions=DIMS)
    rnd = random.Random(7)
    order = np.argsort(labels, kind="stable")
    texts = [text_for(int(labels[i]), rnd) for i in order]
    mean = sum(map(len, texts)) / max(1, len(texts))
    started = time.perf_counter()
    with connection.cursor() as cursor:
        raw = cursor.connection
        with raw.cursor().copy(
            "COPY ragapp_document (source_path, title, format, content_hash, size_bytes, "
            "metadata, ingested_at, updated_at, relative_path, url) FROM STDIN"
        ) as copy:
            for d in range(math.ceil(n / per_document)):
                copy.write_row(
                    (f"bench/{d}.md", f"Doc {d}", "markdown", "x", 1, "{}", "now", "now", "", "")
                )
        cursor.execute("SELECT min(id) FROM ragapp_document")
        first_doc = cursor.fetchone()[0]
        with raw.cursor().copy(
            "COPY ragapp_chunk (document_id, ordinal, text, heading_path, has_code, embedding, "
            "metadata, bm25_mean_chars) FROM STDIN"
        ) as copy:
            for position, i in enumerate(order):
                vector = "[" + ",".join(f"{x:.5f}" for x in vectors[i]) + "]"
                copy.write_row(
                    (
                        first_doc + position // per_document,
                        position % per_document,
                        texts[position],
                        "",
                        False,
                        vector,
                        "{}",
                        mean,
                    )
                )
        cursor.execute("ANALYZE ragapp_chunk")
    return time.perf_counter() - started


def build_index(m: int, ef_construction: int, kind: str) -> float:
    """Build the product's HNSW index storing `kind` ('vector' or 'halfvec'); returns seconds."""
    from django.db import connection, transaction

    from ragapp.retrieval import vector as vector_index

    vector_index.HNSW_M, vector_index.HNSW_EF_CONSTRUCTION = m, ef_construction
    vector_index.INDEX_TYPE = kind
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        # The graph must fit in memory for a fast build (pgvector warns otherwise).
        cursor.execute("SET LOCAL maintenance_work_mem = '6GB'")
        cursor.execute("SET LOCAL max_parallel_maintenance_workers = 1")
        vector_index.create_hnsw_index(DIMS)
    return time.perf_counter() - started


def sql_one(sql: str, params=()):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


class PreparedEmbeddings:
    """The product's retrievers embed the query text; here the text names a prepared vector."""

    provider, model_name, dimensions = "bench", "synthetic-384", DIMS
    model_id = "bench/synthetic-384"

    def __init__(self, queries):
        self.queries = queries

    def embed_query(self, text):
        return self.queries[text][0]


def exact_ids(vector) -> list[int]:
    from django.db import connection

    literal = "[" + ",".join(f"{x:.6f}" for x in vector) + "]"
    with connection.cursor() as cursor:
        # No cast to vector(384): the HNSW expression index does not match, so this is a scan.
        cursor.execute(
            "SELECT id FROM ragapp_chunk ORDER BY embedding <=> %s::vector LIMIT %s", [literal, K]
        )
        return [row[0] for row in cursor.fetchall()]


def timed(fn, queries, *, before=None):
    """Milliseconds and results of `fn` on each query; `before` runs untimed ahead of each."""
    times, results = [], []
    for q in queries:
        if before:
            before()
        started = time.perf_counter()
        results.append(fn(q))
        times.append((time.perf_counter() - started) * 1000)
    return times, results


def seed_approach(path: Path, query_vector) -> list[int]:
    """The article's retrieval: read vectors.json, cosine against every entry, sort."""
    entries = json.loads(path.read_text())
    q = list(query_vector)
    qn = math.sqrt(sum(x * x for x in q))
    scored = []
    for index, entry in enumerate(entries):
        e = entry["embedding"]
        dot = sum(a * b for a, b in zip(q, e, strict=True))
        scored.append((dot / (qn * math.sqrt(sum(x * x for x in e))), index))
    scored.sort(reverse=True)
    return [index for _, index in scored[:K]]


def exact_capped_ids(vector, cap_k: int) -> list[int]:
    """The exact nearest chunk of each of the `cap_k` nearest documents (cap one per document)."""
    from django.db import connection

    literal = "[" + ",".join(f"{x:.6f}" for x in vector) + "]"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM (SELECT DISTINCT ON (document_id) id, embedding <=> %s::vector AS d "
            "FROM ragapp_chunk ORDER BY document_id, d) best ORDER BY d LIMIT %s",
            [literal, cap_k],
        )
        return [row[0] for row in cursor.fetchall()]


_LEGACY_MEAN: dict[int, float] = {}


def legacy_cached(key: str, compute):
    """The product's statistics cache before migration 0009 (Django's cache, 5 minutes)."""
    from django.core.cache import cache

    value = cache.get(f"legacy:{key}")
    if value is None:
        value = compute()
        cache.set(f"legacy:{key}", value, 300)
    return value


def legacy_document_frequencies(lexemes: list[str], version: int) -> dict[str, int]:
    """Before migration 0009: each word's chunks counted through the GIN index and the heap,
    cached per word under the newest chunk id. Today's hybrid and its BM25 half use this; the
    product now reads `ragapp_bm25_term`."""
    from django.core.cache import cache
    from django.db import connection

    keys = {t: f"legacy:df:{version}:{t.encode().hex()}" for t in lexemes}
    found = cache.get_many(list(keys.values()))
    frequencies = {t: found[key] for t, key in keys.items() if key in found}
    missing = [t for t in lexemes if t not in frequencies]
    if missing:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT t, (SELECT count(*) FROM ragapp_chunk WHERE search_vector @@ "
                "quote_literal(t)::tsquery) FROM unnest(%s::text[]) AS t",
                [missing],
            )
            fresh = dict(cursor.fetchall())
        cache.set_many({keys[t]: n for t, n in fresh.items()}, 300)
        frequencies.update(fresh)
    return frequencies


def legacy_bm25_ids(query: str, *, limit: int) -> list[int]:
    """Today's BM25 before issue 19: each candidate's tsvector unnested to count the query's words.

    The product's code of 2026-11-30 (ragapp/retrieval/text_search.py), kept here as the
    baseline: the same candidates, idf and constants; the mean length is read as it was.
    """
    from django.db import connection

    from ragapp.retrieval import text_search as ts

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme FROM unnest(to_tsvector('english', %s)) ORDER BY lexeme", [query]
        )
        lexemes = [row[0] for row in cursor.fetchall()]
    if not lexemes:
        return []
    (version,) = sql_one("SELECT coalesce(max(id), 0) FROM ragapp_chunk")
    chunks = legacy_cached(
        f"chunks:{version}", lambda: sql_one("SELECT count(*) FROM ragapp_chunk")[0]
    )
    # Cached per collection version, as the product cached it.
    if version not in _LEGACY_MEAN:
        (_LEGACY_MEAN[version],) = sql_one(
            "SELECT coalesce(avg(length(text)), 0) FROM ragapp_chunk"
        )
    mean = _LEGACY_MEAN[version]
    frequencies = legacy_document_frequencies(lexemes, version)
    present = [t for t in lexemes if frequencies.get(t)]
    if not present or not chunks:
        return []
    weights = [ts.idf(frequencies[t], chunks) for t in present]
    selecting = [t for t in present if frequencies[t] <= ts.COMMON_SHARE * chunks] or present
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH q(lexeme, idf) AS (SELECT * FROM unnest(%(lexemes)s::text[], %(idf)s::float8[])),
            candidates AS (
                SELECT id, search_vector, length(text) AS chars FROM ragapp_chunk
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
                "k1": ts.K1,
                "b": ts.B,
                "mean": max(float(mean), 1.0),
                "boost": ts.HEADING_BOOST,
                "limit": limit,
            },
        )
        return [row[0] for row in cursor.fetchall()]


def legacy_hybrid_ids(embeddings, query: str, *, k: int, depth: int) -> list[int]:
    """Today's hybrid search before issue 19, as the product ran it (ragapp of 2026-11-30).

    Both candidate lists were read through the ORM as whole chunks with their documents (80
    rows each), then fused and cut to k; BM25 by `legacy_bm25_ids`. The caller sets the old
    ef_search and turns iterative scans off (`legacy_vector_settings`).
    """
    from ragapp.models import Chunk
    from ragapp.retrieval import retrievers as r
    from ragapp.retrieval import vector as v
    from ragapp.selectors import embedding_index_check

    vector = embeddings.embed_query(query)
    distance = v.cosine_distance_to(vector, dimensions=embeddings.dimensions)
    chunks = Chunk.objects.select_related("document").defer("embedding", "search_vector")
    with v.one_snapshot():
        embedding_index_check(embeddings=embeddings)
        v.set_search_settings(k=depth)
        dense = list(chunks.annotate(distance=distance).order_by("distance")[:depth])
        dense.sort(key=lambda row: (row.distance, row.id))
        ids = legacy_bm25_ids(query, limit=depth)
        found = {c.id: c for c in chunks.filter(id__in=ids).annotate(distance=distance)}
        lexical = [found[i] for i in ids if i in found]
    scores, by_id = {}, {c.id: c for c in dense}
    for rank, c in enumerate(dense, 1):
        scores[c.id] = scores.get(c.id, 0.0) + 1.0 / (r.RRF_K + rank)
    for rank, c in enumerate(lexical, 1):
        scores[c.id] = scores.get(c.id, 0.0) + 0.35 / (r.RRF_K + rank)
        by_id.setdefault(c.id, c)
    ranked = sorted(scores, key=lambda i: -scores[i])
    docs = [r._as_doc(by_id[i], 1.0 - float(by_id[i].distance)) for i in ranked]
    return [d.chunk_id for d in docs[:k]]


def exact_fused_ids(vector, query: str, *, k: int, depth: int) -> list[int]:
    """The hybrid ranking with an exact dense half: the product's fusion over the exact top
    `depth` by cosine and the product's BM25 top `depth`. Any HNSW index only approximates the
    dense half, so this, not another approximate run, is what a hybrid should agree with."""
    from django.db import connection, transaction

    from ragapp.retrieval import retrievers as r
    from ragapp.retrieval import text_search as ts

    literal = "[" + ",".join(f"{x:.6f}" for x in vector) + "]"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute(
            "SELECT id FROM ragapp_chunk ORDER BY embedding <=> %s::vector, id LIMIT %s",
            [literal, depth],
        )
        dense = [row[0] for row in cursor.fetchall()]
    scores = {}
    for rank, i in enumerate(dense, 1):
        scores[i] = scores.get(i, 0.0) + 1.0 / (r.RRF_K + rank)
    for rank, i in enumerate(ts.bm25_chunk_ids(query, limit=depth), 1):
        scores[i] = scores.get(i, 0.0) + 0.35 / (r.RRF_K + rank)
    return sorted(scores, key=lambda i: -scores[i])[:k]


def binary_ids(vector, rerank: int) -> list[int]:
    """Hamming distance on 1-bit codes through their HNSW index, then exact cosine re-ranking."""
    from django.db import connection

    literal = "[" + ",".join(f"{x:.6f}" for x in vector) + "]"
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(max(rerank, 40))])
        cursor.execute(
            f"""
            SELECT id FROM (
                SELECT id, embedding FROM ragapp_chunk
                ORDER BY binary_quantize(embedding::vector({DIMS}))::bit({DIMS})
                    <~> binary_quantize(%(q)s::vector({DIMS}))
                LIMIT %(rerank)s
            ) c ORDER BY embedding <=> %(q)s::vector LIMIT %(k)s
            """,
            {"q": literal, "rerank": rerank, "k": K},
        )
        return [row[0] for row in cursor.fetchall()]


STATS_TRIGGERS = ("ragapp_chunk_bm25_inserted", "ragapp_chunk_bm25_deleted")


def replace_documents(vectors, labels, *, documents: int, per_document: int, stats: bool) -> float:
    """Seconds to write `documents` documents as ingestion does, then delete them again.

    Each document is one transaction with one multi-row INSERT of its chunks (and each is
    deleted in its own), so the statement triggers run per document, as in an ingest. With
    `stats` off, the term-statistics triggers (migration 0009) are disabled for both the writes
    and the deletes, which leaves the statistics as they were.
    """
    from django.db import connection, transaction

    rnd = random.Random(11)
    toggle = "ENABLE" if stats else "DISABLE"
    with connection.cursor() as cursor:
        for name in STATS_TRIGGERS:
            cursor.execute(f"ALTER TABLE ragapp_chunk {toggle} TRIGGER {name}")
    started = time.perf_counter()
    written = []
    for d in range(documents):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO ragapp_document (source_path, title, format, content_hash, "
                "size_bytes, metadata, ingested_at, updated_at, relative_path, url) VALUES "
                "(%s, 'Bench', 'markdown', 'x', 1, '{}', now(), now(), '', '') RETURNING id",
                [f"bench/write-{stats}-{d}.md"],
            )
            (document_id,) = cursor.fetchone()
            rows = []
            for ordinal in range(per_document):
                i = rnd.randrange(len(vectors))
                vector = "[" + ",".join(f"{x:.5f}" for x in vectors[i]) + "]"
                rows.append((document_id, ordinal, text_for(int(labels[i]), rnd), "Bench", vector))
            cursor.execute(
                "INSERT INTO ragapp_chunk (document_id, ordinal, text, heading_path, has_code, "
                "embedding, metadata) VALUES "
                + ", ".join(["(%s, %s, %s, %s, false, %s, '{}')"] * len(rows)),
                [value for row in rows for value in row],
            )
            written.append(document_id)
    for document_id in written:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("DELETE FROM ragapp_chunk WHERE document_id = %s", [document_id])
            cursor.execute("DELETE FROM ragapp_document WHERE id = %s", [document_id])
    seconds = time.perf_counter() - started
    with connection.cursor() as cursor:
        for name in STATS_TRIGGERS:
            cursor.execute(f"ALTER TABLE ragapp_chunk ENABLE TRIGGER {name}")
    return seconds


def recall(hits, truth) -> float:
    return statistics.mean(
        len(set(h) & set(t)) / max(1, len(t)) for h, t in zip(hits, truth, strict=True)
    )


def mib(nbytes) -> str:
    return f"{nbytes / 2**20:.1f} MiB"


def concurrent_qps(search, names, threads: int) -> float:
    """Searches per second with `threads` searching at once, each on its own connection."""
    from django.db import connections

    work = list(names) * max(1, 4 * threads // len(names) + 1)
    chunks = [work[i::threads] for i in range(threads)]

    def worker(mine):
        try:
            for q in mine:
                search(q)
        finally:
            connections.close_all()

    started = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(c,)) for c in chunks]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return len(work) / (time.perf_counter() - started)


def run_size(n: int, args) -> list[dict]:
    rng = np.random.default_rng(n)
    clusters = max(50, n // 200)
    centres, labels, vectors = synthetic(n, clusters, rng)
    rows = []
    with throwaway_django(RAG_EMBEDDING_PROVIDER="fake"):
        from django.conf import settings
        from django.core.cache import cache
        from django.db import connection, transaction

        from ragapp.retrieval import text_search as text_search_module
        from ragapp.retrieval import vector as vector_index
        from ragapp.retrieval.retrievers import HybridRetriever, VectorRetriever

        def legacy_vector_settings():
            # Before issue 19: ef_search was max(RAG_HNSW_EF_SEARCH, k), no iterative scans.
            vector_index.EF_SEARCH_REFERENCE_CHUNKS = 10**12
            vector_index.EF_SEARCH_PER_ROW = 1
            settings.RAG_HNSW_ITERATIVE_SCAN = "off"

        def new_vector_settings():
            vector_index.EF_SEARCH_REFERENCE_CHUNKS = EF_REFERENCE
            vector_index.EF_SEARCH_PER_ROW = EF_PER_ROW
            settings.RAG_HNSW_ITERATIVE_SCAN = "relaxed_order"

        def forget_statistics():
            # Before migration 0009 document frequencies were cached per lexeme for 5 minutes:
            # the first query with a word counted it (through the GIN index and the heap).
            # "cold" empties that cache before every query (untimed), "warm" runs after one
            # pass over the same queries. The product now reads them from a table, cache or no.
            cache.clear()
            _LEGACY_MEAN.clear()

        def hybrid_rows(label, search, agree_with, agree_label):
            ms, hits = timed(search, names, before=forget_statistics)
            rows.append(_row(n, f"{label}, cold stats", ms, exact_p50, recall=None))
            for q in names:
                search(q)
            ms, hits = timed(search, names)
            rows.append(
                _row(
                    n,
                    f"{label}, warm stats",
                    ms,
                    exact_p50,
                    recall=recall(hits, agree_with),
                    recall_label=agree_label,
                )
            )
            rows.append(
                _row(
                    n,
                    f"{label}: agreement",
                    ms,
                    exact_p50,
                    recall=recall(hits, fused_truth),
                    recall_label="vs exact-dense fusion",
                )
            )
            return hits

        PRODUCT_BUILD = (vector_index.HNSW_M, vector_index.HNSW_EF_CONSTRUCTION)
        EF_REFERENCE = vector_index.EF_SEARCH_REFERENCE_CHUNKS
        EF_PER_ROW = vector_index.EF_SEARCH_PER_ROW
        if args.champion_min_chunks is not None:
            # Before the load, so that its triggers build the lists as an ingest would.
            sql_one(
                "UPDATE ragapp_bm25_collection SET champion_min_chunks = %s RETURNING 1",
                [args.champion_min_chunks],
            )
        load_s = fill(n, vectors, labels, args.chunks_per_document)
        (listed,) = sql_one("SELECT count(*) FROM ragapp_bm25_term WHERE champion_depth > 0")
        print(f"  champion lists: {listed:,} words have one", flush=True)
        index_s = build_index(args.m, args.ef_construction, "vector")
        (index_bytes,) = sql_one("SELECT pg_relation_size('chunk_embedding_hnsw')")
        print(
            f"\n{n:,} chunks ({args.chunks_per_document} per document): loaded in {load_s:.1f} s "
            f"(BM25 weights included), HNSW vector (m={args.m}, "
            f"ef_construction={args.ef_construction}) built in {index_s:.1f} s, "
            f"{mib(index_bytes)}",
            flush=True,
        )
        qrng = np.random.default_rng(n + 1)
        qlabels = qrng.integers(0, clusters, args.queries)
        qvecs = centres[qlabels] + 0.05 * qrng.standard_normal((args.queries, DIMS)).astype(
            np.float32
        )
        qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
        rnd = random.Random(3)
        queries = {
            " ".join(rnd.sample(topic_words(int(label)), 3)) + f" q{i}": (qvecs[i].tolist(), label)
            for i, label in enumerate(qlabels)
        }
        names = list(queries)
        embeddings = PreparedEmbeddings(queries)

        exact_ms, truth = timed(lambda q: exact_ids(queries[q][0]), names)
        exact_p50 = statistics.median(exact_ms)
        rows.append(_row(n, "exact scan", exact_ms, exact_p50, recall=1.0))
        capped_truth = [exact_capped_ids(queries[q][0], K) for q in names]

        def vector_rows(label, efs):
            retriever = VectorRetriever(embeddings)
            for ef in efs:
                settings.RAG_HNSW_EF_SEARCH = ef
                ms, hits = timed(lambda q: [d.chunk_id for d in retriever.search(q, k=K)], names)
                rows.append(
                    _row(n, f"{label} ef_search={ef}", ms, exact_p50, recall=recall(hits, truth))
                )
            settings.RAG_HNSW_EF_SEARCH = args.ef_default

        def capped_row(label):
            retriever = VectorRetriever(embeddings, per_document_cap=1)
            ms, hits = timed(lambda q: [d.chunk_id for d in retriever.search(q, k=K)], names)
            rows.append(_row(n, label, ms, exact_p50, recall=recall(hits, capped_truth)))

        # -- today's methods ---------------------------------------------------------------
        legacy_vector_settings()
        vector_rows("hnsw vector", args.ef)
        capped_row(f"hnsw vector, cap 1/doc (ef {args.ef_default})")
        fused_truth = [exact_fused_ids(queries[q][0], q, k=K, depth=K * 8) for q in names]
        legacy_hits = hybrid_rows(
            "hybrid today (unnest BM25)",
            lambda q: legacy_hybrid_ids(embeddings, q, k=K, depth=K * 8),
            fused_truth,
            "vs exact-dense fusion",
        )
        legacy_text = [legacy_bm25_ids(q, limit=K * 8) for q in names]
        ms, _ = timed(lambda q: legacy_bm25_ids(q, limit=K * 8), names)
        rows.append(_row(n, "text half today (unnest BM25)", ms, exact_p50, recall=None))

        # -- issue 19: BM25 as a sparse vector ---------------------------------------------
        ms, text_hits = timed(lambda q: text_search_module.bm25_chunk_ids(q, limit=K * 8), names)
        rows.append(
            _row(
                n, "text half sparsevec BM25", ms, exact_p50, recall=recall(text_hits, legacy_text)
            )
        )
        (listed_words,) = sql_one("SELECT count(*) FROM ragapp_bm25_term WHERE champion_depth > 0")
        if listed_words:
            # The same BM25 scoring every chunk of the query's words (before migration 0010).
            (minimum,) = sql_one("SELECT champion_min_chunks FROM ragapp_bm25_collection")
            sql_one(
                "UPDATE ragapp_bm25_collection SET champion_min_chunks = 2147483647 RETURNING 1"
            )
            ms, full_hits = timed(
                lambda q: text_search_module.bm25_chunk_ids(q, limit=K * 8), names
            )
            sql_one(
                "UPDATE ragapp_bm25_collection SET champion_min_chunks = %s RETURNING 1", [minimum]
            )
            rows.append(
                _row(
                    n,
                    f"text half sparsevec BM25, every candidate scored ({listed_words:,} words "
                    "have champion lists)",
                    ms,
                    exact_p50,
                    recall=recall(text_hits, full_hits),
                    recall_label="lists vs none, top 80",
                )
            )
        hybrid = HybridRetriever(embeddings)
        hybrid_rows(
            "hybrid sparsevec BM25 (vector index)",
            lambda q: [d.chunk_id for d in hybrid.search(q, k=K)],
            legacy_hits,
            "vs today",
        )
        (mean,) = sql_one("SELECT avg(length(text)) FROM ragapp_chunk")
        for factor in args.mean_errors:
            started = time.perf_counter()
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    "UPDATE ragapp_chunk SET bm25_mean_chars = %s", [float(mean) * factor]
                )
            reweigh_s = time.perf_counter() - started
            cache.clear()
            hits = [[d.chunk_id for d in hybrid.search(q, k=K)] for q in names]
            print(
                f"  mean length off by x{factor}: all weights rewritten in {reweigh_s:.1f} s; "
                f"hybrid recall@10 vs today {recall(hits, legacy_hits):.3f}",
                flush=True,
            )
        with transaction.atomic():
            started = time.perf_counter()
            rewritten = text_search_module.bm25_refresh()
            print(
                f"  bm25_refresh: {rewritten:,} chunks re-normalised in "
                f"{time.perf_counter() - started:.1f} s",
                flush=True,
            )
        started = time.perf_counter()
        with transaction.atomic():
            text_search_module.bm25_refresh()
        print(f"  bm25_refresh with nothing to do: {time.perf_counter() - started:.2f} s")
        with connection.cursor() as cursor:
            # The rewrites left a dead version of every row, still in the GIN index: until a
            # vacuum (autovacuum, in a deployment) each BM25 candidate is read twice. The first
            # run of this benchmark timed the product's hybrid in that state (53.5 ms at 100k).
            cursor.execute("VACUUM ANALYZE ragapp_chunk")
        sizes = sql_one(
            "SELECT sum(pg_column_size(bm25)), sum(pg_column_size(search_vector)), "
            "sum(pg_column_size(embedding)), sum(pg_column_size(embedding::halfvec(384))) "
            "FROM ragapp_chunk"
        )
        print(
            f"  column sizes: bm25 {mib(sizes[0])}, search_vector {mib(sizes[1])}, embedding "
            f"as vector {mib(sizes[2])}, as halfvec {mib(sizes[3])}",
            flush=True,
        )

        # -- issue 19: iterative scans, ef_search following the table's size ----------------
        for mode in ("relaxed_order", "strict_order"):
            new_vector_settings()
            settings.RAG_HNSW_ITERATIVE_SCAN = mode
            vector_rows(f"hnsw vector {mode}, sized", [args.ef_default])
            capped_row(f"hnsw vector {mode}, sized, cap 1/doc")
        new_vector_settings()

        # -- issue 19: halfvec index ---------------------------------------------------------
        half_s = build_index(*PRODUCT_BUILD, "halfvec")
        (half_bytes,) = sql_one("SELECT pg_relation_size('chunk_embedding_hnsw')")
        print(
            f"  HNSW halfvec (the product's build: m={PRODUCT_BUILD[0]}, "
            f"ef_construction={PRODUCT_BUILD[1]}) built in {half_s:.1f} s "
            f"({half_s / index_s:.2f}x vector), "
            f"{mib(half_bytes)} ({half_bytes / index_bytes:.2f}x vector)",
            flush=True,
        )
        legacy_vector_settings()
        vector_rows("hnsw halfvec", args.ef)
        new_vector_settings()
        vector_rows("hnsw halfvec relaxed_order, sized", [args.ef_default])
        capped_row("hnsw halfvec relaxed_order, sized, cap 1/doc")
        hybrid_rows(
            "hybrid product (halfvec)",
            lambda q: [d.chunk_id for d in hybrid.search(q, k=K)],
            legacy_hits,
            "vs today",
        )
        capped = HybridRetriever(embeddings, per_document_cap=1)
        ms, hits = timed(lambda q: [d.chunk_id for d in capped.search(q, k=K)], names)
        rows.append(_row(n, "hybrid product, cap 1/doc", ms, exact_p50, recall=None))

        for build in args.builds:
            # Other HNSW builds of the halfvec index, at the product's sized ef_search.
            m, ef_construction = (int(x) for x in build.split(":"))
            build_s = build_index(m, ef_construction, "halfvec")
            (build_bytes,) = sql_one("SELECT pg_relation_size('chunk_embedding_hnsw')")
            print(
                f"  HNSW halfvec m={m} ef_construction={ef_construction} built in {build_s:.1f} s, "
                f"{mib(build_bytes)}",
                flush=True,
            )
            vector_rows(f"hnsw halfvec m={m} efc={ef_construction}, sized", [args.ef_default])
            hybrid_rows(
                f"hybrid product, halfvec m={m} efc={ef_construction}",
                lambda q: [d.chunk_id for d in hybrid.search(q, k=K)],
                legacy_hits,
                "vs today",
            )

        if args.write_documents:
            # What the term statistics cost an ingest: the same writes with their triggers on
            # and off, alternated so that drift in the machine's load falls on both.
            spent = {True: 0.0, False: 0.0}
            for stats in (False, True, False, True):
                spent[stats] += replace_documents(
                    vectors,
                    labels,
                    documents=args.write_documents,
                    per_document=args.chunks_per_document,
                    stats=stats,
                )
            written = 2 * args.write_documents * args.chunks_per_document
            print(
                f"  writes, {written:,} chunks in {args.chunks_per_document}-chunk documents "
                f"(written, then deleted): {written / spent[False]:.0f} chunks/s without the "
                f"term statistics, {written / spent[True]:.0f}/s with them "
                f"({spent[True] / spent[False]:.2f}x the time)",
                flush=True,
            )
            rows.append(
                {"chunks": n, "method": "writes", "without": spent[False], "with": spent[True]}
            )

        if args.concurrency:
            one = concurrent_qps(lambda q: hybrid.search(q, k=K), names, 1)
            many = concurrent_qps(lambda q: hybrid.search(q, k=K), names, args.concurrency)
            print(
                f"  hybrid throughput: 1 at a time {one:.1f}/s, {args.concurrency} at once "
                f"{many:.1f}/s ({many / one:.2f}x) on {os.cpu_count()} CPUs",
                flush=True,
            )
            rows.append({"chunks": n, "method": "throughput", "one": one, "many": many})

        # -- issue 19: binary quantization with re-ranking -----------------------------------
        if args.binary:
            started = time.perf_counter()
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL maintenance_work_mem = '6GB'")
                cursor.execute(
                    "CREATE INDEX chunk_embedding_binary ON ragapp_chunk USING hnsw "
                    f"((binary_quantize(embedding::vector({DIMS}))::bit({DIMS})) bit_hamming_ops)"
                )
            bin_s = time.perf_counter() - started
            (bin_bytes,) = sql_one("SELECT pg_relation_size('chunk_embedding_binary')")
            print(
                f"  HNSW binary built in {bin_s:.1f} s ({bin_s / index_s:.2f}x vector), "
                f"{mib(bin_bytes)} ({bin_bytes / index_bytes:.2f}x vector)",
                flush=True,
            )
            for rerank in (40, 100, 400):
                with transaction.atomic():
                    ms, hits = timed(lambda q, r=rerank: binary_ids(queries[q][0], r), names)
                rows.append(
                    _row(n, f"binary + re-rank {rerank}", ms, exact_p50, recall=recall(hits, truth))
                )

        if n <= args.seed_max:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "vectors.json"
                entries = [
                    {
                        "embedding": [round(float(x), 6) for x in v],
                        "pageContent": "",
                        "metadata": {},
                    }
                    for v in vectors
                ]
                path.write_text(json.dumps(entries))
                del entries
                sample = names[: args.seed_queries]
                ms, _ = timed(lambda q: seed_approach(path, queries[q][0]), sample)
                rows.append(
                    _row(
                        n, f"seed vectors.json ({len(sample)} queries)", ms, exact_p50, recall=None
                    )
                )
        else:
            print(
                f"  seed vectors.json: not run at {n:,} (a JSON file of "
                f"{n * DIMS * 10 / 1e9:.1f} GB read on every query)"
            )
    return rows


def _row(n, method, ms, exact_p50, *, recall, recall_label=""):
    row = {
        "chunks": n,
        "method": method,
        "p50_ms": statistics.median(ms),
        "p95_ms": percentile(ms, 0.95),
        "ratio": statistics.median(ms) / exact_p50,
        "recall_at_10": recall,
        "recall_against": recall_label,
    }
    recall_text = "" if recall is None else f"  recall@10 {recall:.3f} {recall_label}"
    print(
        f"  {method:<34} p50 {row['p50_ms']:9.2f} ms  p95 {row['p95_ms']:9.2f} ms  "
        f"x{row['ratio']:.3f} of exact{recall_text}",
        flush=True,
    )
    return row


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--ef", default="10,20,40,80,160")
    parser.add_argument("--ef-default", type=int, default=100)  # RAG_HNSW_EF_SEARCH
    # Today's build (before issue 19), for the float32 index; the halfvec one is the product's.
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--ef-construction", type=int, default=64)
    parser.add_argument("--seed-max", type=int, default=100_000)
    parser.add_argument("--seed-queries", type=int, default=5)
    parser.add_argument("--chunks-per-document", type=int, default=10)
    parser.add_argument("--mean-errors", default="1.1,1.25", help="Mean-length errors to try.")
    parser.add_argument("--concurrency", type=int, default=8, help="0: skip.")
    parser.add_argument(
        "--write-documents", type=int, default=50, help="Documents per write round; 0: skip."
    )
    parser.add_argument("--no-binary", dest="binary", action="store_false")
    parser.add_argument(
        "--champion-min-chunks",
        type=int,
        help="Words in more chunks get champion lists (default: the product's, 1000).",
    )
    parser.add_argument(
        "--builds", default="", help="Other halfvec builds to measure, as m:ef_construction,..."
    )
    parser.add_argument("--json", type=Path, help="Also write the rows here.")
    args = parser.parse_args(argv)
    args.ef = [int(x) for x in args.ef.split(",")]
    args.mean_errors = [float(x) for x in args.mean_errors.split(",") if x]
    args.builds = [x for x in args.builds.split(",") if x]
    sizes = [int(x) for x in args.sizes.split(",")]
    print(f"retrieval benchmark: {os.cpu_count()} CPUs, {args.queries} queries per size")
    rows = []
    if len(sizes) == 1:
        rows = run_size(sizes[0], args)
    else:
        # Settings are read once per process, so each size gets a process (and database) of its own.
        for n in sizes:
            with tempfile.NamedTemporaryFile(suffix=".json") as out:
                argv_n = [a for a in (argv or sys.argv[1:])]
                subprocess.run(
                    [sys.executable, __file__, *argv_n, "--sizes", str(n), "--json", out.name],
                    check=True,
                )
                rows += json.loads(Path(out.name).read_text() or "[]")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
