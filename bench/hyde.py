"""The first search with and without a passage written for it (RAG_HYDE), in one run.

For every answerable question of a golden set, against the knowledge base in RAG_DATA_DIR (build
it first: docs/evaluation.md, "The golden sets"), the configured query-rewriting model
(RAG_BROADEN_MODEL) writes the passage as the graph does (graph/hypothesis.py), and the product's
retriever then searches twice: for the question alone (the baseline, `RAG_HYDE=false`) and for
the question and the passage (the graph with `RAG_HYDE=true`). Both are measured the same way:

- **recall@5 / MRR@10** of the expected sources, as `eval_rag` measures them;
- **facts shown**: the questions whose expected facts are all in what the model is shown (the
  first five hits cut to their excerpts, as the graph cuts them, and each chunk's section): a
  ceiling on fact accuracy that no generator can pass;
- **search ms**: embedding and ranking, p50 (the passage makes the query longer).

It prints each figure for both and the ratio with the passage to without, and the time taken to
write a passage (p50 and p95), which is what a run pays for it. It needs the chat model, not the
whole graph: a set of 56 questions takes about two minutes with the packaged model.

    uv run python bench/hyde.py tests/eval/golden_docs.jsonl
    RAG_DATA_DIR=/work/corpora/openssl-data uv run python bench/hyde.py bench/golden/openssl30.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("golden", type=Path)
    parser.add_argument("--json", type=Path, help="write the figures and every passage here")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings

    from ragapp.evaluation.golden import load_golden
    from ragapp.evaluation.metrics import (
        fact_present,
        percentile,
        recall_at_k,
        reciprocal_rank,
    )
    from ragapp.graph.context import Usage
    from ragapp.graph.excerpts import EXCERPT_COMPANIONS, focused
    from ragapp.graph.hypothesis import search_text, write_hypothesis
    from ragapp.providers import get_embeddings
    from ragapp.providers.chat import get_chat_models
    from ragapp.retrieval.retrievers import CANDIDATE_FACTOR, build_retriever

    embeddings = get_embeddings()
    retriever = build_retriever(mode=settings.RAG_RETRIEVAL_MODE, embeddings=embeddings)
    model = get_chat_models().broadener  # the graph's passage writer
    items = [item for item in load_golden(args.golden) if item.answerable]
    depth, k = settings.RAG_TOP_K * CANDIDATE_FACTOR, settings.RAG_TOP_K

    passages, problems, writing_ms = {}, {}, []
    for item in items:
        started = time.perf_counter()
        passages[item.id], problems[item.id] = write_hypothesis(model, item.question, usage=Usage())
        writing_ms.append((time.perf_counter() - started) * 1000)

    def measure(with_passage: bool) -> dict:
        recall = rr = shown = 0.0
        search_ms = []
        for item in items:
            query = search_text(item.question, passages[item.id] if with_passage else "")
            started = time.perf_counter()
            ranked = retriever.search(query, k=10, depth=depth)
            search_ms.append((time.perf_counter() - started) * 1000)
            sources = [doc.source_path for doc in ranked]
            recall += recall_at_k(sources, item.sources, 5)
            rr += reciprocal_rank(sources, item.sources, 10)
            docs = retriever.search(query, k=k, companions=EXCERPT_COMPANIONS)
            if settings.RAG_EXCERPT_CHARS:
                docs = focused(
                    docs, item.question, embeddings, budget=settings.RAG_EXCERPT_CHARS, whole=1
                )
            text = "\n".join(f"{doc.heading_path}\n{doc.excerpt or doc.text}" for doc in docs)
            shown += all(fact_present(fact, text) for fact in item.facts)
        n = max(1, len(items))
        return {
            "recall_at_5": round(recall / n, 3),
            "mrr_at_10": round(rr / n, 3),
            "facts_shown": int(shown),
            "search_ms_p50": round(statistics.median(search_ms), 1) if search_ms else 0.0,
        }

    alone, together = measure(False), measure(True)
    result = {
        "golden": str(args.golden),
        "answerable": len(items),
        "question_alone": alone,
        "with_passage": together,
        "ratio": {
            name: round(together[name] / alone[name], 3) if alone[name] else None for name in alone
        },
        "writing_ms_p50": round(statistics.median(writing_ms), 1) if writing_ms else 0.0,
        "writing_ms_p95": round(percentile(writing_ms, 95) or 0.0, 1),
        "no_passage": sum(bool(problem) for problem in problems.values()),
    }
    print(f"{args.golden.name}: {len(items)} answerable questions")
    print(f"{'':14} {'question alone':>15} {'with passage':>13} {'ratio':>6}")
    for name in alone:
        ratio = result["ratio"][name]
        print(
            f"{name:14} {alone[name]:>15} {together[name]:>13} "
            f"{'-' if ratio is None else f'{ratio:.3f}':>6}"
        )
    print(
        f"writing a passage: p50 {result['writing_ms_p50']:.0f} ms, "
        f"p95 {result['writing_ms_p95']:.0f} ms; none written for {result['no_passage']}"
    )
    if args.json:
        result["passages"] = passages
        args.json.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
