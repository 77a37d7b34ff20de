"""The local server's build: reading and writing speed against the portable wheel, in one run.

On Linux x86-64, `uv sync` compiles llama.cpp (xllamacpp's source package) for the machine's own
CPU ([models.md](../docs/models.md), "The local server's build"). This compares that build with
xllamacpp's portable wheel from the package registry, the build the product used before: the same
prompts (slices of this documentation's pages, about as long as a retrieval's documents prefix),
each read cold with a one-token reply, then a 150-token answer written over the cached prompt, by
the packaged 1.5B model. Each build runs in a server of its own, in a process of its own, the two
alternating for `--rounds` rounds. It prints prompt and answer tokens per second for each build
and the ratios of the installed build to the portable one.

The portable wheel is fetched once from the package registry (as `uv sync` fetches packages) into
`RAG_DATA_DIR/bench/`, its digest checked against the registry's; nothing else needs the network.

    uv run python bench/llama_build.py
    uv run python bench/llama_build.py --rounds 3 --prompts 4 --json out.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPI = "https://pypi.org/pypi/xllamacpp/json"
WHEEL_TAG = "manylinux2014_x86_64"
SLICE_CHARS = 5200  # about 1,300 tokens: five retrieved chunks with their headings and tags
ANSWER_TOKENS = 150


def portable_wheel(version: str, cache: Path) -> Path:
    """xllamacpp `version`'s portable Linux x86-64 wheel, unpacked under `cache` (fetched once)."""
    target = cache / f"xllamacpp-{version}-portable"
    if (target / "xllamacpp").is_dir():
        return target
    with urllib.request.urlopen(PYPI, timeout=60) as response:
        files = json.load(response)["releases"][version]
    (wheel,) = [
        f for f in files if f["filename"].endswith(f"-abi3-{WHEEL_TAG}.manylinux_2_17_x86_64.whl")
    ]
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / wheel["filename"]
    # A registry mirror may give the file's address relative to the JSON's.
    urllib.request.urlretrieve(urllib.parse.urljoin(PYPI, wheel["url"]), path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != wheel["digests"]["sha256"]:
        path.unlink()
        raise SystemExit(f"{wheel['filename']}: sha256 {digest} is not the registry's")
    with zipfile.ZipFile(path) as archive:
        archive.extractall(target)
    path.unlink()
    return target


def probe(prompts: int) -> None:
    """In a child process: time `prompts` prompts with whichever xllamacpp this process imports.

    The server is the product's own (`local_llm.local_server`: its context, threads, prompt cache
    and reply cap), so the two builds differ in nothing else.
    """
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    django.setup()
    import xllamacpp

    from ragapp.providers.local_llm import local_server

    server = local_server("qwen2.5-coder-1.5b")
    pages = sorted((ROOT / "docs").glob("*.md"))
    url = f"{server.base_url}/chat/completions"

    def ask(messages: list[dict], max_tokens: int) -> dict:
        body = json.dumps({"messages": messages, "max_tokens": max_tokens, "temperature": 0})
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {server.api_key}"}
        request = urllib.request.Request(url, body.encode(), headers)
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.load(response)

    def shared(text: str, task: str) -> list[dict]:
        # The documents first and the task last, as the product's prompts share their prefix.
        return [
            {"role": "system", "content": "You are a careful assistant for support engineers."},
            {"role": "user", "content": f"<documents>\n{text}\n</documents>\n\n{task}"},
        ]

    ask([{"role": "user", "content": "Say yes."}], 1)
    for n in range(prompts):
        text = pages[n % len(pages)].read_text()[SLICE_CHARS * n : SLICE_CHARS * (n + 1)]
        read = ask(shared(text, "Is this page about configuration? Answer yes or no."), 1)
        read = read["timings"]
        messages = shared(text, "Summarise what this page says in five sentences.")
        write = ask(messages, ANSWER_TOKENS)["timings"]
        print(
            json.dumps(
                {
                    "prompt_tokens": read["prompt_n"],
                    "prompt_per_s": read["prompt_per_second"],
                    "answer_tokens": write["predicted_n"],
                    "answer_per_s": write["predicted_per_second"],
                }
            ),
            flush=True,
        )
    print("SYSTEM " + xllamacpp.get_system_info().strip(), flush=True)


def run_build(name: str, extra_path: Path | None, prompts: int) -> tuple[list, str]:
    env = dict(os.environ)
    if extra_path is not None:
        env["PYTHONPATH"] = str(extra_path)  # ahead of site-packages: this build is imported
    done = subprocess.run(
        [sys.executable, __file__, "--probe", "--prompts", str(prompts)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{name} build failed (exit {done.returncode}): {done.stderr[-800:]}")
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    system = next(line[7:] for line in done.stdout.splitlines() if line.startswith("SYSTEM "))
    return rows, system


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probe(args.prompts)
        return {}
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from importlib.metadata import version

    from django.conf import settings

    portable = portable_wheel(version("xllamacpp"), Path(settings.RAG_DATA_DIR) / "bench")
    results: dict[str, list] = {"installed": [], "portable": []}
    systems = {}
    for _ in range(args.rounds):  # alternating, so that a slower minute hits both
        for name, path in (("portable", portable), ("installed", None)):
            rows, systems[name] = run_build(name, path, args.prompts)
            results[name] += rows
    summary = {
        name: {
            "prompts": len(rows),
            "prompt_per_s": round(statistics.median(r["prompt_per_s"] for r in rows), 1),
            "answer_per_s": round(statistics.median(r["answer_per_s"] for r in rows), 1),
            "cpu": systems[name],
        }
        for name, rows in results.items()
    }
    for key in ("prompt_per_s", "answer_per_s"):
        summary[f"{key}_ratio"] = round(summary["installed"][key] / summary["portable"][key], 2)
    print(f"{'build':<10} {'prompts':>7} {'prompt tok/s':>13} {'answer tok/s':>13}")
    for name in ("portable", "installed"):
        s = summary[name]
        print(f"{name:<10} {s['prompts']:>7} {s['prompt_per_s']:>13} {s['answer_per_s']:>13}")
    print(
        f"installed / portable: prompt reading {summary['prompt_per_s_ratio']}x, "
        f"answer writing {summary['answer_per_s_ratio']}x"
    )
    for name in ("portable", "installed"):
        print(f"{name}: {summary[name]['cpu']}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return summary


if __name__ == "__main__":
    main()
