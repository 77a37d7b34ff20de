"""Concurrent runs on the local model: two and four at once, against one at a time, same run.

The local provider serves every run from one llama.cpp server per model, one request at a time,
so concurrent runs queue for it: each model call waits behind the others' calls. The question
this answers is whether a run ever fails *because of another run* (a model call timing out in
that queue, a run passing RAG_RUN_MAX_SECONDS), and what concurrency costs each run.

For each level (1, the baseline, then 2 and 4 by default) it starts that many runs of different
answerable questions of tests/eval/golden_docs.jsonl at once, each on its own thread through the
product's runner (`execute_run`, as the executor's threads call it), and reports each run's
status and time. It prints, per level, the runs that failed and why, the p50 and the longest
run, and the ratio of the p50 to the one-at-a-time p50. It exits 1 if any run failed.

    uv run python bench/concurrent_runs.py                   # levels 1, 2 and 4 (~5 minutes)
    uv run python bench/concurrent_runs.py --levels 1 2
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _django import throwaway_django

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "eval" / "golden_docs.jsonl"


def answerable_questions() -> list[str]:
    items = [json.loads(line) for line in GOLDEN.read_text().splitlines() if line.strip()]
    return [item["question"] for item in items if item["answerable"]]


def one_run(question: str) -> dict:
    """Execute one run on this thread; its status, error and seconds."""
    from django.db import connections

    from ragapp.runs.runner import execute_run
    from ragapp.services import run_create

    try:
        started = time.perf_counter()
        run = execute_run(run_create(query=question))
        seconds = time.perf_counter() - started
        run.refresh_from_db()
        return {"status": run.status, "error": run.error, "seconds": seconds, "q": question}
    finally:
        connections.close_all()  # this thread's connection


def level(questions: list[str]) -> list[dict]:
    with ThreadPoolExecutor(max_workers=len(questions)) as pool:
        return list(pool.map(one_run, questions))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    levels = sorted(set(args.levels) - {1})
    pool = answerable_questions()
    with throwaway_django(RAG_EMBEDDING_PROVIDER="local", RAG_CHAT_PROVIDER="local"):
        from django.conf import settings
        from django.core.management import call_command

        call_command("ingest_docs", str(settings.BASE_DIR / "docs"), stdout=io.StringIO())
        one_run(pool[-1])  # warm the model servers: their start is not a run's cost
        results: dict[int, list[dict]] = {}
        offset = 0
        # The baseline takes as many questions one at a time as the largest level takes at once.
        base = pool[offset : offset + max(levels)]
        results[1] = [one_run(q) for q in base]
        offset += len(base)
        for n in levels:
            results[n] = level(pool[offset : offset + n])
            offset += n
        limits = {
            "RAG_LLM_TIMEOUT": settings.RAG_LLM_TIMEOUT,
            "RAG_RUN_MAX_SECONDS": settings.RAG_RUN_MAX_SECONDS,
        }
    base_p50 = statistics.median(r["seconds"] for r in results[1])
    summary, failed = [], 0
    print(f"limits: {limits}")
    print("level  runs  failed  p50 s  longest s  p50 / one-at-a-time p50")
    for n, runs in results.items():
        p50 = statistics.median(r["seconds"] for r in runs)
        bad = [r for r in runs if r["status"] == "failed"]
        failed += len(bad)
        longest = max(r["seconds"] for r in runs)
        ratio = p50 / base_p50
        print(f"{n:5d}  {len(runs):4d}  {len(bad):6d}  {p50:5.1f}  {longest:9.1f}  {ratio:.2f}")
        for r in bad:
            print(f"       failed: {r['error'][:200]}  ({r['q']})")
        summary.append(
            {
                "level": n,
                "runs": len(runs),
                "failed": len(bad),
                "statuses": sorted(r["status"] for r in runs),
                "p50_s": round(p50, 1),
                "longest_s": round(longest, 1),
                "ratio_p50": round(p50 / base_p50, 2),
            }
        )
    if args.json:
        args.json.write_text(json.dumps({"limits": limits, "levels": summary}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
