"""Every benchmark from one entry point, with one summary table at the end.

Each benchmark runs in a process of its own (each starts its own throwaway database) and hands
its figures back as JSON. Each figure is shown next to the baseline it was measured against in
the same run, and their ratio.

    uv run python bench/all.py --quick    # small sizes: a few minutes
    uv run python bench/all.py            # the sizes of docs/performance.md: an hour or more
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

QUICK = {
    "ingest": ["--mb", "0.3"],
    "graph": ["--runs", "15", "--local-questions", "0"],
    "sse": ["--clients", "20"],
    "retrieval": ["--sizes", "10000", "--queries", "30", "--seed-queries", "2"],
    "load": ["--quick"],
    "gaps": ["--runs", "2000"],
    "reuse": ["--local-questions", "0", "--repeats", "10"],
}
FULL = {
    "ingest": [],
    "graph": ["--local-questions", "10"],
    "sse": [],
    "retrieval": ["--sizes", "10000,100000"],
    "prompt_cache": [],
    "llama_build": [],
    "load": [],
    "gaps": [],
    "reuse": [],
}


def summarise(name: str, data) -> list[tuple[str, str, str, str]]:
    """(figure, value, baseline, ratio) rows of one benchmark's JSON."""
    if name == "ingest":
        return [
            (
                "ingest: pipeline chunks/s",
                f"{data['pipeline_chunks_per_s']:.1f}",
                f"raw embedder {data['raw_embedder_chunks_per_s']:.1f}",
                f"{data['pipeline_over_raw']:.3f}",
            ),
            (
                "ingest: unchanged re-run s",
                f"{data['unchanged_rerun_s']:.2f}",
                f"first run {data['first_run_s']:.1f}",
                f"{data['rerun_fraction']:.4f}",
            ),
        ]
    if name == "graph":
        o = data["overhead"]
        rows = [
            (
                "graph: run with instant models, ms p50",
                f"{o['full_run_ms_p50']:.1f}",
                f"bare retrieval {o['bare_retrieval_ms_p50']:.1f}",
                f"{o['full_run_ms_p50'] / max(o['bare_retrieval_ms_p50'], 1e-9):.2f}",
            )
        ]
        if "local" in data:
            loc = data["local"]
            rows.append(("graph: local end to end s p50", str(loc["p50_s"]), "-", "-"))
        return rows
    if name == "sse":
        base = data[0]
        return [
            (
                f"sse: {row['clients']} clients, p95 ms (lost {row['lost']}, dup "
                f"{row['duplicates']})",
                f"{row['p95_ms']:.1f}",
                f"1 client {base['p95_ms']:.1f}",
                f"{row['p95_ms'] / max(base['p95_ms'], 1e-9):.2f}",
            )
            for row in data[1:]
        ]
    if name == "retrieval":
        return [
            (
                f"retrieval {row['chunks']:,}: {row['method']} p50 ms"
                + (
                    "" if row["recall_at_10"] is None else f" (recall@10 {row['recall_at_10']:.3f})"
                ),
                f"{row['p50_ms']:.2f}",
                "exact scan",
                f"{row['ratio']:.3f}",
            )
            for row in data
            if row["method"] != "exact scan"
        ]
    if name == "load":
        single, multi = data["single"], data["multi"]
        label = f"load {data['settings']['rate']:g} runs/s, {data['settings']['readers']} readers"
        done_s, done_m = (d["runs completed (done seen)"] for d in (single, multi))
        rate_s, rate_m = (d["runs completed per s while submitting"] for d in (single, multi))
        ttfe_s, ttfe_m = (d["time to first event p95 ms"] or 0.0 for d in (single, multi))
        errors = sum(multi["http errors"].values())
        return [
            (
                f"{label}: multi runs completed (lost {multi['events lost']}, errors {errors})",
                str(done_m),
                f"single process {done_s}",
                f"{done_m / max(done_s, 1):.2f}",
            ),
            (
                f"{label}: multi runs completed per s while submitting",
                f"{rate_m:.1f}",
                f"single process {rate_s:.1f}",
                f"{rate_m / max(rate_s, 1e-9):.2f}",
            ),
            (
                f"{label}: multi time to first event p95 ms",
                f"{ttfe_m:.0f}",
                f"single process {ttfe_s:.0f}",
                f"{ttfe_m / max(ttfe_s, 1e-9):.2f}",
            ),
        ]
    if name == "gaps":
        return [
            (
                f"gaps page at {data['runs']} runs s",
                f"{data['page_s']:.3f}",
                f"plain read {data['baseline_read_s']:.3f}",
                f"{data['page_ratio_to_baseline']:.1f}",
            )
        ]
    if name == "reuse":
        speed = data["speed"]
        return [
            (
                "reuse: exact reused answer ms p50",
                f"{speed['reused_exact_ms_p50']:.1f}",
                f"fresh run, fake models {speed['fresh_fake_ms_p50']:.1f}",
                f"{speed['reused_exact_ms_p50'] / speed['fresh_fake_ms_p50']:.3f}",
            )
        ]
    if name == "prompt_cache":
        return [
            (
                "prompt cache: faithfulness prompt ms after generate",
                f"{data['warm_prompt_ms_median']:.0f}",
                f"cache off {data['cold_prompt_ms_median']:.0f}",
                f"{data['ratio']:.3f}",
            )
        ]
    if name == "llama_build":
        return [
            (
                f"llama.cpp for this CPU: {figure} tokens/s",
                f"{data['installed'][key]:.1f}",
                f"portable wheel {data['portable'][key]:.1f}",
                f"{data[f'{key}_ratio']:.2f}",
            )
            for figure, key in (("prompt", "prompt_per_s"), ("answer", "answer_per_s"))
        ]
    return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few minutes")
    parser.add_argument("--only", nargs="+", choices=list(FULL), help="run only these")
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    rows, failed = [], []
    for name, extra in plan.items():
        if args.only and name not in args.only:
            continue
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            print(f"\n=== bench/{name}.py {' '.join(extra)}", flush=True)
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, str(HERE / f"{name}.py"), *extra, "--json", out.name]
            )
            seconds = time.perf_counter() - started
            if done.returncode != 0:
                failed.append(name)
                continue
            rows += summarise(name, json.loads(Path(out.name).read_text()))
            print(f"=== {name}: {seconds:.0f} s", flush=True)
    width = max((len(r[0]) for r in rows), default=10)
    print(f"\n{'figure':<{width}}  {'value':>10}  {'baseline (same run)':<26} {'ratio':>8}")
    for figure, value, baseline, ratio in rows:
        print(f"{figure:<{width}}  {value:>10}  {baseline:<26} {ratio:>8}")
    if failed:
        print(f"\nFAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
