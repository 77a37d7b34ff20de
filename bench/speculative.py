"""Speculative decoding for the local writer: answer time with and without it, in one run.

The issue's lever: llama.cpp can draft tokens with the packaged 0.5B model, or from n-grams of
the prompt itself (prompt lookup, no second model), and have the 1.5B model verify several at a
time. For the first answerable questions of a golden set, each mode gets its own in-process
server with the product's settings; the documents are read first with a one-token verdict (as
grading does, so the answer is timed on a warm prompt cache), then the answer is written at
temperature 0. It prints, per mode, the seconds for all answers, milliseconds per answer token,
the ratio against no speculation, and how many answers came out word for word the same.

    uv run python bench/speculative.py --questions 8
    uv run python bench/speculative.py --modes none ngram-map-k
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODES = ("none", "ngram-simple", "ngram-map-k", "draft")


def speculation(mode: str):
    """A function that sets llama.cpp's parameters for speculation `mode` (the server's hook)."""
    import xllamacpp

    from ragapp.providers.local_llm import model_path

    kinds = xllamacpp.common_speculative_type

    def configure(params) -> None:
        if mode == "ngram-simple":
            params.speculative.types = [kinds.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
        elif mode == "ngram-map-k":
            params.speculative.types = [kinds.COMMON_SPECULATIVE_TYPE_NGRAM_MAP_K]
            params.speculative.ngram_map_k.size_n, params.speculative.ngram_map_k.size_m = 4, 16
        elif mode == "draft":
            params.speculative.types = [kinds.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
            draft = params.speculative.draft
            draft.mparams.path = str(model_path("qwen2.5-coder-0.5b"))
            draft.cpuparams.n_threads = draft.cpuparams_batch.n_threads = os.cpu_count() or 2
            draft.n_max, draft.n_min, draft.p_min = 8, 0, 0.75

    return configure


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--golden", type=Path, default=ROOT / "tests/eval/golden_docs.jsonl")
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from langchain_openai import ChatOpenAI

    from ragapp.evaluation.golden import load_golden
    from ragapp.graph import prompts
    from ragapp.graph.excerpts import EXCERPT_COMPANIONS, focused
    from ragapp.providers import get_embeddings, local_llm
    from ragapp.retrieval.retrievers import build_retriever

    embeddings = get_embeddings()
    retriever = build_retriever(mode=settings.RAG_RETRIEVAL_MODE, embeddings=embeddings)
    items = [i for i in load_golden(args.golden) if i.answerable][: args.questions]
    shown = []
    for item in items:
        docs = retriever.search(item.question, k=settings.RAG_TOP_K, companions=EXCERPT_COMPANIONS)
        cut = focused(docs, item.question, embeddings, budget=settings.RAG_EXCERPT_CHARS, whole=1)
        shown.append((item.question, cut))
    modes = ["none", *[m for m in args.modes if m != "none"]]  # the baseline first
    results: dict[str, dict] = {}
    for mode in modes:
        # One server at a time: the handle is dropped after its mode, which stops the server.
        running = local_llm._start("qwen2.5-coder-1.5b", configure=speculation(mode))
        model = ChatOpenAI(
            model=running.name,
            api_key=running.api_key,
            base_url=running.base_url,
            temperature=0,
            timeout=600,
        )
        seconds, tokens, texts = 0.0, 0, []
        for question, docs in shown:
            model.invoke(prompts.relevance_yes_no_messages(question, docs, 1), max_tokens=1)
            started = time.perf_counter()
            reply = model.invoke(prompts.generate_messages(question, docs), max_tokens=320)
            seconds += time.perf_counter() - started
            tokens += reply.response_metadata.get("token_usage", {}).get("completion_tokens", 0)
            texts.append(reply.content)
        del model, running
        base = results.get("none")
        results[mode] = {
            "seconds": round(seconds, 1),
            "answer_tokens": tokens,
            "ms_per_token": round(1000 * seconds / max(1, tokens), 1),
            "ratio_vs_none": round(seconds / base["seconds"], 2) if base else 1.0,
            "same_answers": sum(a == b for a, b in zip(texts, base["texts"], strict=True))
            if base
            else len(texts),
            "texts": texts,
        }
    print(f"{len(items)} answers from {args.golden.name}, one run")
    print(f"{'mode':>12} {'seconds':>8} {'tokens':>7} {'ms/token':>9} {'ratio':>6} {'same':>5}")
    for mode, row in results.items():
        print(
            f"{mode:>12} {row['seconds']:>8} {row['answer_tokens']:>7} {row['ms_per_token']:>9} "
            f"{row['ratio_vs_none']:>6} {row['same_answers']:>5}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
