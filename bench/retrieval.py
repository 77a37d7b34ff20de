"""Retrieval latency and HNSW recall at 10k, 100k and 1M chunks (synthetic 384-dim vectors).

For each size it fills a throwaway embedded PostgreSQL with clustered unit vectors (like real
sentence embeddings, which crowd into topics) and chunk texts drawn from a word list, builds the
HNSW index exactly as ingestion does, then times, over the same held-out queries:

- exact: a sequential scan ordered by cosine distance (the ground truth, and the baseline);
- hnsw: the product's vector retriever at several `hnsw.ef_search` values, with recall@10
  against exact;
- hybrid: the product's hybrid retriever (vector + full-text, weighted reciprocal rank fusion);
- seed: the design article's approach, load `vectors.json` and brute-force cosine in Python on
  every query (only where it fits in memory and time).

Each line prints p50/p95 latency and the ratio of p50 to the exact scan measured in the same run.

    uv run python bench/retrieval.py --sizes 10000            # a quick look (about a minute)
    uv run python bench/retrieval.py                          # 10k, 100k, 1M (an hour or more)
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


def fill(n: int, vectors: np.ndarray, labels: np.ndarray) -> float:
    """COPY n chunks (100 per document) into the database; returns seconds."""
    from django.db import connection

    from ragapp.models import EmbeddingIndex

    EmbeddingIndex.objects.create(provider="bench", model="bench/synthetic-384", dimensions=DIMS)
    rnd = random.Random(7)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        raw = cursor.connection
        with raw.cursor().copy(
            "COPY ragapp_document (source_path, title, format, content_hash, size_bytes, "
            "metadata, ingested_at, updated_at) FROM STDIN"
        ) as copy:
            for d in range(math.ceil(n / 100)):
                copy.write_row(
                    (f"bench/{d}.md", f"Doc {d}", "markdown", "x", 1, "{}", "now", "now")
                )
        cursor.execute("SELECT min(id) FROM ragapp_document")
        first_doc = cursor.fetchone()[0]
        with raw.cursor().copy(
            "COPY ragapp_chunk (document_id, ordinal, text, heading_path, has_code, embedding, "
            "metadata) FROM STDIN"
        ) as copy:
            for i in range(n):
                vector = "[" + ",".join(f"{x:.5f}" for x in vectors[i]) + "]"
                copy.write_row(
                    (
                        first_doc + i // 100,
                        i % 100,
                        text_for(int(labels[i]), rnd),
                        "",
                        False,
                        vector,
                        "{}",
                    )
                )
        cursor.execute("ANALYZE ragapp_chunk")
    return time.perf_counter() - started


def build_index(m: int, ef_construction: int) -> float:
    from django.db import connection, transaction

    from ragapp.retrieval import vector as vector_index

    vector_index.HNSW_M, vector_index.HNSW_EF_CONSTRUCTION = m, ef_construction
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        # The graph must fit in memory for a fast build (pgvector warns otherwise).
        cursor.execute("SET LOCAL maintenance_work_mem = '6GB'")
        cursor.execute("SET LOCAL max_parallel_maintenance_workers = 1")
        vector_index.create_hnsw_index(DIMS)
    return time.perf_counter() - started


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


def timed(fn, queries):
    times, results = [], []
    for q in queries:
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


def run_size(n: int, args) -> list[dict]:
    rng = np.random.default_rng(n)
    clusters = max(50, n // 200)
    centres, labels, vectors = synthetic(n, clusters, rng)
    rows = []
    with throwaway_django(RAG_EMBEDDING_PROVIDER="fake"):
        from django.conf import settings

        from ragapp.retrieval.retrievers import HybridRetriever, VectorRetriever

        load_s = fill(n, vectors, labels)
        index_s = build_index(args.m, args.ef_construction)
        print(
            f"\n{n:,} chunks: loaded in {load_s:.1f} s, HNSW (m={args.m}, "
            f"ef_construction={args.ef_construction}) built in {index_s:.1f} s",
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

        vector = VectorRetriever(embeddings)
        for ef in args.ef:
            settings.RAG_HNSW_EF_SEARCH = ef
            ms, hits = timed(lambda q: [d.chunk_id for d in vector.search(q, k=K)], names)
            recall = statistics.mean(
                len(set(h) & set(t)) / K for h, t in zip(hits, truth, strict=True)
            )
            rows.append(_row(n, f"hnsw ef_search={ef}", ms, exact_p50, recall=recall))
        settings.RAG_HNSW_EF_SEARCH = args.ef_default
        hybrid = HybridRetriever(embeddings)
        ms, _ = timed(lambda q: hybrid.search(q, k=K), names)
        rows.append(_row(n, f"hybrid (ef_search={args.ef_default})", ms, exact_p50, recall=None))

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


def _row(n, method, ms, exact_p50, *, recall):
    row = {
        "chunks": n,
        "method": method,
        "p50_ms": statistics.median(ms),
        "p95_ms": percentile(ms, 0.95),
        "ratio": statistics.median(ms) / exact_p50,
        "recall_at_10": recall,
    }
    recall_text = "" if recall is None else f"  recall@10 {recall:.3f}"
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
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--ef-construction", type=int, default=64)
    parser.add_argument("--seed-max", type=int, default=100_000)
    parser.add_argument("--seed-queries", type=int, default=5)
    parser.add_argument("--json", type=Path, help="Also write the rows here.")
    args = parser.parse_args(argv)
    args.ef = [int(x) for x in args.ef.split(",")]
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
