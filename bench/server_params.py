"""The local server's llama.cpp settings on this CPU: reading and writing speed, in one run.

The product starts two llama.cpp servers per model (`ragapp/providers/local_llm.py`): the
reader, on which the judges read each retrieval's documents, with the weights left unrepacked
(`no_extra_bufts`), and the writer, with llama.cpp's repacked weights, which takes over the
reader's KV cache and writes the answer (`RAG_LOCAL_READER`). Both use llama.cpp's defaults for
the micro-batch (512), flash attention (auto) and busy-polling (50), and as many threads as the
machine has cores. Those choices were measured on a CPU with AVX-512 (docs/models.md, "Server
settings, speculative decoding and the smaller model"; docs/performance.md, "The local server's
build"). This asks whether another setting reads or writes faster on the machine it runs on.

Each setting gets a server of its own, in a process of its own, built exactly as the product
builds its reader and then changed in that one setting; "writer" is the product's writer. The
settings run in a rotated order each round, so that a slower minute does not always hit the same
one. Each round reads one cold prompt (the start of one of this documentation's pages, a different
page each round, about 650 tokens: three of a retrieval's chunks) with a one-token reply, then
writes up to 60 tokens over it. One server runs at a time: how the product's two servers share
the cores is not measured here (bench/reader_handoff.py runs the whole graph both ways).

It prints each setting's median prompt and answer tokens per second, and the median over rounds
of its ratio to the reader measured in the same round, with the machine it ran on.

    uv run python bench/server_params.py                  # 2 rounds, about 10 minutes on 2 cores
    uv run python bench/server_params.py --rounds 3 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLICE_CHARS = 2600  # 600-800 tokens of this documentation
ANSWER_TOKENS = 60


def _ubatch(size: int):
    return lambda params: setattr(params, "n_ubatch", size)


def _set(name: str, value):
    return lambda params: setattr(params, name, value)


def _no_polling(params) -> None:
    params.cpuparams.poll = 0
    params.cpuparams_batch.poll = 0


def _reader(params) -> None:
    params.no_extra_bufts = True  # as local_llm.local_reader_server starts it


def _on_reader(change):
    def configure(params) -> None:
        _reader(params)
        change(params)

    return configure


BASELINE = "reader"
# name -> how it changes the product's server parameters.
SETTINGS = {
    BASELINE: _reader,
    "writer": lambda params: None,
    "micro-batch 128": _on_reader(_ubatch(128)),
    "micro-batch 1024": _on_reader(_ubatch(1024)),
    "flash attention on": _on_reader(_set("flash_attn_type", 1)),
    "flash attention off": _on_reader(_set("flash_attn_type", 0)),
    "no busy-polling": _on_reader(_no_polling),
}


def probe(setting: str, round_: int) -> dict:
    """In a child process: one server with `setting`, one cold prompt, then one answer."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    django.setup()
    from ragapp.providers.local_llm import _start

    server = _start("qwen2.5-coder-1.5b", SETTINGS[setting])
    url = f"{server.base_url}/chat/completions"

    def ask(task: str, text: str, max_tokens: int) -> dict:
        messages = [
            {"role": "system", "content": "You are a careful assistant for support engineers."},
            {"role": "user", "content": f"<documents>\n{text}\n</documents>\n\n{task}"},
        ]
        body = json.dumps({"messages": messages, "max_tokens": max_tokens, "temperature": 0})
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {server.api_key}"}
        request = urllib.request.Request(url, body.encode(), headers)
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.load(response)["timings"]

    ask("Say yes.", "", 1)  # the first request pays for loading; not timed
    pages = [page.read_text() for page in sorted((ROOT / "docs").glob("*.md"))]
    long_pages = [text for text in pages if len(text) >= SLICE_CHARS]
    text = long_pages[round_ % len(long_pages)][:SLICE_CHARS]
    read = ask("Is this page about configuration? Answer yes or no.", text, 1)
    write = ask("Summarise what this page says in three sentences.", text, ANSWER_TOKENS)
    return {
        "setting": setting,
        "round": round_,
        "prompt_tokens": read["prompt_n"],
        "prompt_per_s": read["prompt_per_second"],
        "answer_tokens": write["predicted_n"],
        "answer_per_s": write["predicted_per_second"],
    }


def run_setting(setting: str, round_: int) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--probe", setting, "--round", str(round_)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{setting} failed (exit {done.returncode}): {done.stderr[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summarise(rows: list[dict]) -> dict:
    """Each setting's medians, and the median over rounds of its ratio to the reader's round.

    Each round reads another page, so a ratio within the round cancels what the page changes.
    """
    by_round = {(row["setting"], row["round"]): row for row in rows}
    summary = {}
    for setting in SETTINGS:
        mine = [row for row in rows if row["setting"] == setting]
        values = {"rounds": len(mine)}
        for key in ("prompt_per_s", "answer_per_s"):
            values[key] = round(statistics.median(row[key] for row in mine), 2)
            ratios = [row[key] / by_round[(BASELINE, row["round"])][key] for row in mine]
            values[f"{key}_ratio"] = round(statistics.median(ratios), 3)
        summary[setting] = values
    return summary


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--probe", choices=sorted(SETTINGS), help=argparse.SUPPRESS)
    parser.add_argument("--round", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(probe(args.probe, args.round)), flush=True)
        return {}
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    from ragapp.evaluation.machine import describe_machine, machine_line

    machine = describe_machine()
    print(machine_line(machine))
    rows, names = [], list(SETTINGS)
    for round_ in range(1, args.rounds + 1):
        turn = (round_ - 1) % len(names)
        for setting in names[turn:] + names[:turn]:  # rotated: no setting always goes first
            rows.append(run_setting(setting, round_))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    summary = summarise(rows)
    print(f"{'setting':<20} {'prompt tok/s':>12} {'ratio':>6} {'answer tok/s':>12} {'ratio':>6}")
    print(f"(ratios: the median over rounds of each setting's speed over the {BASELINE}'s)")
    for setting, s in summary.items():
        print(
            f"{setting:<20} {s['prompt_per_s']:>12} {s['prompt_per_s_ratio']:>6} "
            f"{s['answer_per_s']:>12} {s['answer_per_s_ratio']:>6}"
        )
    if args.json:
        report = {"machine": machine, "rows": rows, "summary": summary}
        args.json.write_text(json.dumps(report, indent=2))
    return summary


if __name__ == "__main__":
    main()
