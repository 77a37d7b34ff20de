"""The local server's llama.cpp settings on this CPU: reading and writing speed, in one run.

The product starts its llama.cpp servers with llama.cpp's defaults for the micro-batch (512),
flash attention (auto), weight repacking (on) and busy-polling (50), and as many threads as the
machine has cores (`ragapp/providers/local_llm.py`). Those were measured on a CPU with AVX-512
([models.md](../docs/models.md), "Server settings, speculative decoding and the smaller model";
[performance.md](../docs/performance.md), "The local server's build"). This asks whether any of
them reads or writes faster on the machine it runs on: each setting gets a server of its own, in
a process of its own, built exactly as the product builds one and then changed in that one
setting. The settings alternate for `--rounds` rounds, so that a slower minute hits all of them.
Each round reads one cold prompt (a slice of this documentation, a different one each round,
about as long as three retrieved chunks) with a one-token reply, then writes 60 tokens over it.

It prints each setting's median prompt and answer tokens per second and its ratio to the
product's defaults measured in the same run.

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


# name -> how it changes the product's server parameters; "defaults" changes nothing.
SETTINGS = {
    "defaults": lambda params: None,
    "no repacking": _set("no_extra_bufts", True),
    "micro-batch 128": _ubatch(128),
    "micro-batch 1024": _ubatch(1024),
    "flash attention on": _set("flash_attn_type", 1),
    "flash attention off": _set("flash_attn_type", 0),
    "no busy-polling": _no_polling,
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
    pages = sorted((ROOT / "docs").glob("*.md"))
    text = pages[round_ % len(pages)].read_text()[SLICE_CHARS * round_ : SLICE_CHARS * (round_ + 1)]
    read = ask("Is this page about configuration? Answer yes or no.", text, 1)
    write = ask("Summarise what this page says in three sentences.", text, ANSWER_TOKENS)
    return {
        "setting": setting,
        "round": round_,
        "prompt_tokens": read["prompt_n"],
        "prompt_per_s": read["prompt_per_second"],
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
    """Each setting's medians and their ratios to the defaults' medians."""
    summary = {}
    for setting in SETTINGS:
        mine = [row for row in rows if row["setting"] == setting]
        summary[setting] = {
            "rounds": len(mine),
            "prompt_per_s": round(statistics.median(r["prompt_per_s"] for r in mine), 2),
            "answer_per_s": round(statistics.median(r["answer_per_s"] for r in mine), 2),
        }
    base = summary["defaults"]
    for values in summary.values():
        for key in ("prompt_per_s", "answer_per_s"):
            values[f"{key}_ratio"] = round(values[key] / base[key], 3)
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
    rows = []
    for round_ in range(1, args.rounds + 1):
        for setting in SETTINGS:
            rows.append(run_setting(setting, round_))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    summary = summarise(rows)
    print(f"{'setting':<20} {'prompt tok/s':>12} {'ratio':>6} {'answer tok/s':>12} {'ratio':>6}")
    for setting, s in summary.items():
        print(
            f"{setting:<20} {s['prompt_per_s']:>12} {s['prompt_per_s_ratio']:>6} "
            f"{s['answer_per_s']:>12} {s['answer_per_s_ratio']:>6}"
        )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "summary": summary}, indent=2))
    return summary


if __name__ == "__main__":
    main()
