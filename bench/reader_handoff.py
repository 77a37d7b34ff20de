"""What reading on a second server with unrepacked weights saves a local run, in one run.

llama.cpp repacks Q4_K weights at load into a layout that writes one token at a time faster and
reads a prompt slower than its plain kernels (docs/models.md). Since 2026-12-04 the local provider
runs two servers per model (`RAG_LOCAL_READER`): the judges read the documents on one whose
weights are left as they are, and the writer takes over its KV cache (llama.cpp's slot save and
restore) before it writes. Each question goes through the product's whole graph twice, in one
process, rotating which arm goes first:

- one server: `RAG_LOCAL_READER=false`, every job on the repacked server (the code before);
- reader: the product, the judges on the unrepacked server and the writer after a handoff.

Both servers start without llama.cpp's host-memory prompt cache, and both forget their prompt
before every run, so no arm finds the documents the arm before it read. It prints each arm's
seconds per question, p50, p95 and mean, the ratio reader/one server, each arm's share of the
summed run time per node, and how many outcomes and answers differ. Reading on other kernels
moves the model's numbers a little, so a near tie at temperature 0 can go the other way: the
difference count says how often.

    uv run python bench/reader_handoff.py                 # 12 questions, about 7 minutes on 2 cores
    uv run python bench/reader_handoff.py --questions 24
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _django import throwaway_django
from pipeline import docs_and_local_model, forget_prompt, percentile, questions

ARMS = ("one server", "reader")


def run_once(question: str, arm: str) -> tuple[float, str, str, dict[str, float]]:
    """Seconds, status, answer and seconds per node of one run of the graph in `arm`."""
    from django.test import override_settings

    from ragapp.providers.chat import clear_chat_models_cache
    from ragapp.runs.runner import execute_run
    from ragapp.services import run_create

    run = run_create(query=question)
    with override_settings(RAG_LOCAL_READER=arm == "reader"):
        clear_chat_models_cache()  # the clients follow the setting
        started = time.perf_counter()
        execute_run(run)
        seconds = time.perf_counter() - started
    run.refresh_from_db()
    # The runner's own timings per node, as the evaluation harness reads them.
    nodes = {node: ms / 1000 for node, ms in run.response_metadata.get("node_ms", {}).items()}
    return seconds, run.status, run.answer, nodes


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    # Here, not at the top: _django puts the project's root on the path when it is imported.
    from ragapp.evaluation.machine import describe_machine, machine_line

    ran_on = describe_machine()
    print(machine_line(ran_on), flush=True)
    with throwaway_django(RAG_EMBEDDING_PROVIDER="local", RAG_CHAT_PROVIDER="local"):
        from ragapp.graph.context import Usage

        model = docs_and_local_model()  # both servers, without host-memory prompt caches
        seconds: dict[str, list[float]] = {arm: [] for arm in ARMS}
        per_node: dict[str, dict[str, float]] = {arm: defaultdict(float) for arm in ARMS}
        outcomes_differ = answers_differ = 0
        for i, question in enumerate(questions(args.questions)):
            results = {}
            for arm in ARMS if i % 2 == 0 else ARMS[::-1]:
                forget_prompt(model, Usage())
                took, status, answer, nodes = run_once(question, arm)
                seconds[arm].append(took)
                results[arm] = (status, answer)
                for node, node_seconds in nodes.items():
                    per_node[arm][node] += node_seconds
            outcomes_differ += results[ARMS[0]][0] != results[ARMS[1]][0]
            answers_differ += results[ARMS[0]] != results[ARMS[1]]
            print(
                f"  one server {seconds[ARMS[0]][-1]:5.1f} s  reader {seconds[ARMS[1]][-1]:5.1f} s"
                f"  {results[ARMS[0]][0]:8} / {results[ARMS[1]][0]:8}  {question[:60]}",
                flush=True,
            )
    result: dict = {
        "machine": ran_on,
        "questions": args.questions,
        "outcomes_differ": outcomes_differ,
        "answers_differ": answers_differ,
    }
    for arm in ARMS:
        key = arm.replace(" ", "_")
        result[f"{key}_p50_s"] = round(statistics.median(seconds[arm]), 1)
        result[f"{key}_p95_s"] = round(percentile(seconds[arm], 0.95), 1)
        result[f"{key}_mean_s"] = round(statistics.mean(seconds[arm]), 1)
        total = sum(seconds[arm])
        result[f"{key}_node_share"] = {
            node: round(node_seconds / total, 2)
            for node, node_seconds in sorted(per_node[arm].items(), key=lambda kv: -kv[1])
        }
    for stat in ("p50", "p95", "mean"):
        reader, one = result[f"reader_{stat}_s"], result[f"one_server_{stat}_s"]
        result[f"ratio_{stat}"] = round(reader / one, 3)
    print(
        f"one server: p50 {result['one_server_p50_s']} s, p95 {result['one_server_p95_s']} s, "
        f"mean {result['one_server_mean_s']} s; reader: p50 {result['reader_p50_s']} s, "
        f"p95 {result['reader_p95_s']} s, mean {result['reader_mean_s']} s; "
        f"ratio reader/one server: p50 {result['ratio_p50']}, p95 {result['ratio_p95']}, "
        f"mean {result['ratio_mean']}; outcomes that differ: {outcomes_differ}, answers that "
        f"differ: {answers_differ} of {args.questions}"
    )
    for arm in ARMS:
        print(f"{arm}: share of run time per node {result[arm.replace(' ', '_') + '_node_share']}")
    if args.json:
        args.json.write_text(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
