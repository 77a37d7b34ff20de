"""What stopping a looping answer while it is written saves, in one run.

The 1.5B model sometimes falls into a loop at temperature 0 and writes copies of a sentence or two
until its token cap; the graph cuts the copies from the answer (repetition.py). Since 2026-12-04 the
generator streams the reply and stops reading at the first finished copy, so the model stops
writing too. Each question goes through the product's whole graph twice, in one process on one
llama.cpp server started without its host-memory prompt cache, rotating which arm goes first:

- whole: the code before, the reply read to its end (`invoke`) and the copies cut afterwards;
- stopped: the product, the reply streamed and stopped at its first finished copy.

It prints each arm's seconds per question, p50 and mean, the ratio stopped/whole, how many runs
stopped early, and every question whose answer differs between the arms (none should: the cut is
the same).

The default questions are those of tests/eval/golden_docs.jsonl whose answer looped in runs
recorded on 2026-12-03 (a loop is rare, so a sample would measure nothing), and four that did not,
where the stream costs what it costs:

    uv run python bench/early_stop.py                   # 10 questions, about 8 minutes on 2 cores
    uv run python bench/early_stop.py --ids docs-048 docs-009
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
from pipeline import GOLDEN, docs_and_local_model, forget_prompt

LOOPED = ["docs-048", "docs-009", "docs-014", "docs-018", "docs-034", "docs-072"]
DID_NOT = ["docs-001", "docs-020", "docs-040", "docs-060"]


def run_once(question: str, stop: bool) -> tuple[float, str, str, bool]:
    """Seconds, status, answer and whether the reply was stopped early, for one arm.

    The `whole` arm swaps the node's `text_reply` for one that drops `stop_when`, which is the
    code before exactly: `invoke`, no stream. It is put back after every run.
    """
    from ragapp.graph import judges, nodes
    from ragapp.runs.runner import execute_run
    from ragapp.services import run_create

    def whole(*args, stop_when=None, **kwargs):
        return judges.text_reply(*args, **kwargs)  # the code before: no stream, no stop

    nodes.text_reply = judges.text_reply if stop else whole
    run = run_create(query=question)
    started = time.perf_counter()
    try:
        execute_run(run)
    finally:
        nodes.text_reply = judges.text_reply
    seconds = time.perf_counter() - started
    run.refresh_from_db()
    generate = run.events.filter(kind="generate").first()
    stopped = bool(generate and generate.payload.get("stopped_repeating"))
    return seconds, run.status, run.answer, stopped


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", nargs="+", default=LOOPED + DID_NOT)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    lines = [line for line in GOLDEN.read_text().splitlines() if line.strip()]
    by_id = {item["id"]: item["question"] for item in map(json.loads, lines)}
    unknown = [qid for qid in args.ids if qid not in by_id]
    if unknown:
        parser.error(f"not in {GOLDEN.name}: {', '.join(unknown)}")
    with throwaway_django(RAG_EMBEDDING_PROVIDER="local", RAG_CHAT_PROVIDER="local"):
        from ragapp.graph.context import Usage

        model = docs_and_local_model()
        seconds: dict[str, list[float]] = {"whole": [], "stopped": []}
        differ, stopped_runs = [], 0
        for i, qid in enumerate(args.ids):
            answers, stopped_here = {}, False
            for arm in ("whole", "stopped") if i % 2 == 0 else ("stopped", "whole"):
                forget_prompt(model, Usage())
                took, status, answer, stopped = run_once(by_id[qid], arm == "stopped")
                seconds[arm].append(took)
                answers[arm] = (status, answer)
                stopped_here |= stopped  # only the stopped arm can stop
            stopped_runs += stopped_here
            same = answers["whole"] == answers["stopped"]
            if not same:
                differ.append(qid)
            print(
                f"  whole {seconds['whole'][-1]:5.1f} s  stopped {seconds['stopped'][-1]:5.1f} s  "
                f"{answers['stopped'][0]:8} {'same answer' if same else 'ANSWERS DIFFER'}  "
                f"{'stopped early' if stopped_here else 'read to its end':15}  {qid}",
                flush=True,
            )
    result = {"questions": len(args.ids), "stopped_early": stopped_runs, "answers_differ": differ}
    for arm in ("whole", "stopped"):
        result[f"{arm}_p50_s"] = round(statistics.median(seconds[arm]), 1)
        result[f"{arm}_mean_s"] = round(statistics.mean(seconds[arm]), 1)
    result["ratio_p50"] = round(result["stopped_p50_s"] / result["whole_p50_s"], 3)
    result["ratio_mean"] = round(result["stopped_mean_s"] / result["whole_mean_s"], 3)
    print(
        f"whole reply: p50 {result['whole_p50_s']} s, mean {result['whole_mean_s']} s; stopped at "
        f"the first copy: p50 {result['stopped_p50_s']} s, mean {result['stopped_mean_s']} s; "
        f"ratio stopped/whole: p50 {result['ratio_p50']}, mean {result['ratio_mean']}; "
        f"{stopped_runs} of {len(args.ids)} runs stopped early; "
        f"answers that differ: {len(differ)}{' (' + ', '.join(differ) + ')' if differ else ''}"
    )
    if args.json:
        args.json.write_text(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
