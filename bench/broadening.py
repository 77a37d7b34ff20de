"""What broadening costs and buys the local model: one retrieval against three, in one run.

The same questions of tests/eval/golden_docs.jsonl go through the product's graph twice, in one
process on one llama.cpp server, one question at a time, rotating which arm goes first:

- three: `RAG_MAX_RETRIEVALS=3`, the seed's design: when no chunk passes grading, the query is
  broadened and the search made again, up to three retrievals;
- one: `RAG_MAX_RETRIEVALS=1`, the local default: the first retrieval is also the last.

Broadening happens when grading passes nothing, which is mostly for unanswerable questions, so the
questions are the golden set's sample (`eval_rag --sample`): every unanswerable question, then
answerable ones spread through the file. It prints each arm's p50, p95 and mean, the ratios
one/three, how many runs broadened, and every question whose outcome (answered with every expected
fact, answered without, refused) differs between the arms.

    uv run python bench/broadening.py                  # 20 questions, about 10 minutes on 2 cores
    uv run python bench/broadening.py --questions 24
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _django import throwaway_django
from pipeline import GOLDEN, docs_and_local_model, forget_prompt, percentile


def run_once(item, max_retrievals: int) -> tuple[float, str, bool]:
    """Seconds, outcome and whether it broadened, for `item` under the retrieval cap."""
    from django.test import override_settings

    from ragapp.evaluation.metrics import fact_present
    from ragapp.runs.runner import execute_run
    from ragapp.services import run_create

    run = run_create(query=item.question)
    started = time.perf_counter()
    with override_settings(RAG_MAX_RETRIEVALS=max_retrievals):
        execute_run(run)
    seconds = time.perf_counter() - started
    run.refresh_from_db()
    if run.status != "answered":
        outcome = run.status
    elif item.answerable and all(fact_present(fact, run.answer) for fact in item.facts):
        outcome = "right"
    else:
        outcome = "answered, facts missing" if item.answerable else "answered, unanswerable"
    return seconds, outcome, run.iteration_count > 1


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with throwaway_django(RAG_EMBEDDING_PROVIDER="local", RAG_CHAT_PROVIDER="local"):
        from ragapp.evaluation.golden import load_golden, sample_items
        from ragapp.graph.context import Usage

        # Without the host-memory prompt cache: or an arm finds the other's documents read.
        model = docs_and_local_model()
        items = sample_items(load_golden(GOLDEN), args.questions)
        seconds: dict[int, list[float]] = {3: [], 1: []}
        outcomes: dict[int, list[str]] = {3: [], 1: []}
        broadened = {3: 0, 1: 0}
        for i, item in enumerate(items):
            for cap in (3, 1) if i % 2 == 0 else (1, 3):
                forget_prompt(model, Usage())
                took, outcome, wider = run_once(item, cap)
                seconds[cap].append(took)
                outcomes[cap].append(outcome)
                broadened[cap] += wider
            print(
                f"  three {seconds[3][-1]:5.1f} s {outcomes[3][-1]:24}  "
                f"one {seconds[1][-1]:5.1f} s {outcomes[1][-1]:24} {item.id}",
                flush=True,
            )
    result = {"questions": len(items)}
    for cap, name in ((3, "three"), (1, "one")):
        result[f"{name}_p50_s"] = round(statistics.median(seconds[cap]), 1)
        result[f"{name}_p95_s"] = round(percentile(seconds[cap], 0.95), 1)
        result[f"{name}_mean_s"] = round(statistics.mean(seconds[cap]), 1)
        result[f"{name}_broadened"] = broadened[cap]
    result["ratio_p50"] = round(result["one_p50_s"] / result["three_p50_s"], 3)
    result["ratio_mean"] = round(result["one_mean_s"] / result["three_mean_s"], 3)
    result["changed"] = [
        {"id": item.id, "three": a, "one": b}
        for item, a, b in zip(items, outcomes[3], outcomes[1], strict=True)
        if a != b
    ]
    print(
        f"three retrievals: p50 {result['three_p50_s']} s, p95 {result['three_p95_s']} s, mean "
        f"{result['three_mean_s']} s, {broadened[3]} of {len(items)} broadened; one retrieval: "
        f"p50 {result['one_p50_s']} s, p95 {result['one_p95_s']} s, mean {result['one_mean_s']} s; "
        f"ratio one/three: p50 {result['ratio_p50']}, mean {result['ratio_mean']}"
    )
    print(f"outcomes that differ: {len(result['changed'])} of {len(items)}")
    for change in result["changed"]:
        print(f"  {change['id']}: three {change['three']}, one {change['one']}")
    if args.json:
        args.json.write_text(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
