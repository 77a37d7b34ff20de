"""The local writer's answer cap: writing time and facts kept at two caps, in one run.

`RAG_ANSWER_MAX_TOKENS` bounds how long the 1.5B model may write; a reply that runs into it ends
at its last whole sentence (docs/graph.md, "Answer length and loops"). For the answerable
questions of a golden set, each question's documents are retrieved and excerpted as the graph
does, read once with a one-token verdict (as grading does, so both answers are written over the
same warm prompt cache), then the answer is written with the baseline cap and with the product's
cap, the order alternating between questions. It prints the writing time of both (sum, p50, p95)
and their ratio, how many replies the product's cap cut, and how many answers that held every
expected fact at the baseline cap still hold them all.

    uv run python bench/answer_cap.py                       # 20 questions of this documentation
    uv run python bench/answer_cap.py --questions 56 --baseline 320 --cap 160
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


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--golden", type=Path, default=ROOT / "tests/eval/golden_docs.jsonl")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--baseline", type=int, default=320, help="the cap compared against")
    parser.add_argument("--cap", type=int, default=None, help="default: RAG_ANSWER_MAX_TOKENS")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings

    from ragapp.evaluation.golden import load_golden
    from ragapp.evaluation.metrics import facts_accuracy
    from ragapp.graph import prompts
    from ragapp.graph.context import Usage
    from ragapp.graph.excerpts import EXCERPT_COMPANIONS, focused
    from ragapp.graph.judges import text_reply, yes_probability
    from ragapp.graph.repetition import without_repetition, without_unfinished_tail
    from ragapp.providers import get_embeddings
    from ragapp.providers.chat import get_chat_models
    from ragapp.retrieval.retrievers import build_retriever

    cap = args.cap or settings.RAG_ANSWER_MAX_TOKENS
    embeddings = get_embeddings()
    retriever = build_retriever(mode=settings.RAG_RETRIEVAL_MODE, embeddings=embeddings)
    model = get_chat_models().generator
    items = [i for i in load_golden(args.golden) if i.answerable][: args.questions]
    if not items:
        raise SystemExit(f"{args.golden} has no answerable question")

    def write(question: str, docs, max_tokens: int) -> tuple[float, str, bool]:
        """Seconds, the answer as the graph keeps it, and whether the cap cut the reply."""
        started = time.perf_counter()
        reply = text_reply(
            model, prompts.generate_messages(question, docs), usage=Usage(), max_tokens=max_tokens
        )
        seconds = time.perf_counter() - started
        text = reply.text
        return (
            seconds,
            without_repetition(without_unfinished_tail(text) if reply.cut else text),
            reply.cut,
        )

    rows = []
    for n, item in enumerate(items):
        found = retriever.search(item.question, k=settings.RAG_TOP_K, companions=EXCERPT_COMPANIONS)
        docs = focused(found, item.question, embeddings, budget=settings.RAG_EXCERPT_CHARS, whole=1)
        yes_probability(
            model, prompts.relevance_yes_no_messages(item.question, docs, 1), usage=Usage()
        )
        caps = [args.baseline, cap] if n % 2 == 0 else [cap, args.baseline]
        written = {c: write(item.question, docs, c) for c in caps}
        (base_s, base_answer, _), (cap_s, cap_answer, cut) = written[args.baseline], written[cap]
        rows.append(
            {
                "id": item.id,
                "baseline_s": round(base_s, 2),
                "cap_s": round(cap_s, 2),
                "cut": cut,
                "facts_at_baseline": facts_accuracy(item.facts, base_answer),
                "facts_at_cap": facts_accuracy(item.facts, cap_answer),
            }
        )
        print(
            f"  {item.id}: {base_s:5.1f} s at {args.baseline}, {cap_s:5.1f} s at {cap}"
            f"{' (cut)' if cut else ''}",
            flush=True,
        )
    base_times = [r["baseline_s"] for r in rows]
    cap_times = [r["cap_s"] for r in rows]
    held = [r for r in rows if r["facts_at_baseline"]]
    result = {
        "golden": args.golden.name,
        "questions": len(rows),
        "baseline_cap": args.baseline,
        "cap": cap,
        "baseline_s": {
            "sum": round(sum(base_times), 1),
            "p50": statistics.median(base_times),
            "p95": percentile(base_times, 0.95),
        },
        "cap_s": {
            "sum": round(sum(cap_times), 1),
            "p50": statistics.median(cap_times),
            "p95": percentile(cap_times, 0.95),
        },
        "ratio_sum": round(sum(cap_times) / sum(base_times), 3),
        "ratio_p95": round(percentile(cap_times, 0.95) / percentile(base_times, 0.95), 3),
        "cut": sum(r["cut"] for r in rows),
        "facts_kept": f"{sum(r['facts_at_cap'] for r in held)} of {len(held)}",
        "rows": rows,
    }
    print(
        f"{len(rows)} answers from {args.golden.name}, one run. Writing time at {args.baseline} "
        f"tokens: sum {result['baseline_s']['sum']} s, p50 {result['baseline_s']['p50']} s, p95 "
        f"{result['baseline_s']['p95']} s; at {cap}: sum {result['cap_s']['sum']} s, p50 "
        f"{result['cap_s']['p50']} s, p95 {result['cap_s']['p95']} s. Ratio {cap}/{args.baseline}: "
        f"sum {result['ratio_sum']}, p95 {result['ratio_p95']}. Cut by the cap: {result['cut']}. "
        f"Answers with every expected fact at {args.baseline} that keep them at {cap}: "
        f"{result['facts_kept']}."
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
