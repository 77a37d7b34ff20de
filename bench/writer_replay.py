"""The writer alone, written again on an evaluation's recorded retrievals, under named variants.

A lever on the writer (what it is told, how it decodes) can be measured without whole runs of
the graph, which take half an hour a set with the local models. For every answerable question of
GOLDEN whose run in evaluation NAME wrote a draft from its first and only retrieval:

- the documents the writer read are made again (`export_drafts.retrieval_again`: the recorded
  hits, found again with the recorded passage and cut to excerpts as the graph cuts them), and
  the recorded grades say which of them it could use;
- the configured writer writes the answer again under each variant, a question at a time;
- a draft is **right** when it holds every expected fact (`fact_present`, the metric's own test).

The answer check is not run, so a count is what the writer states, not what a run would show:
a variant that wins here still has to win whole runs (`manage.py eval_rag`). `base` is the
product's writer, measured in the same run; every other variant is reported against it, with the
questions it won and lost. The recorded drafts are scored too: the replay's `base` parts from
them on a question or two in forty (the same prompt read cold or from the server's cache), which
is the noise a variant's count must clear.

Variants:
- `base`: the product's prompt and decoding;
- `question-last`: the question said once more after the task, nearest to the answer;
- `source-first`: the reply begun for the model as "According to document [", so that it names
  the document it answers from before it answers (the server continues the started reply);
- `bias:B`: a logit bias of B on every token of the usable documents' specifics (the names,
  options and values `grounding` looks for; only tokens with two letters or digits or more), to
  nudge the writer to the documents' own words. Needs a server that tokenizes (`local`).

    RAG_DATA_DIR=/work/corpora/openssl-data uv run python bench/writer_replay.py conf-openssl \\
        bench/golden/openssl30.jsonl --variants base,question-last,bias:1
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

VARIANTS = ("base", "question-last", "source-first", "bias:B")
# How `source-first` begins the reply the writer continues.
SOURCE_FIRST = "According to document ["


class Case(NamedTuple):
    """One answerable question, the documents its writer read, and the draft it wrote."""

    item: object  # a GoldenItem
    documents: list
    usable: list[int]
    recorded: str


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("evaluation", help="the evaluation's name (eval_rag --name)")
    parser.add_argument("golden", type=Path)
    parser.add_argument("--variants", default="base", help=f"comma-separated: {VARIANTS}")
    parser.add_argument("--limit", type=int, default=0, help="the first N questions only")
    parser.add_argument("--json", type=Path, help="write every draft here")
    args = parser.parse_args()
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for variant in variants:
        _check(variant)
    if "base" not in variants:
        variants.insert(0, "base")
    setup()
    cases, skipped = replayable(args.evaluation, args.golden, limit=args.limit)
    print(f"{len(cases)} questions replayed; left out: {dict(skipped) or 'none'}", flush=True)
    report = replay(cases, variants)
    print(summary(report, cases))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


def _check(variant: str) -> None:
    if variant in ("base", "question-last", "source-first"):
        return
    if variant.startswith("bias:"):
        try:
            float(variant.removeprefix("bias:"))
            return
        except ValueError:
            pass
    raise SystemExit(f"Unknown variant {variant!r}; choose from {', '.join(VARIANTS)}.")


def setup() -> None:
    import os

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def replayable(name: str, golden: Path, *, limit: int = 0) -> tuple[list[Case], dict[str, int]]:
    """The evaluation's answerable questions whose first retrieval can be shown again."""
    from collections import Counter

    from django.conf import settings
    from export_drafts import RETRIEVAL, retrieval_again

    from ragapp.evaluation.golden import load_golden
    from ragapp.models import Evaluation, QueryRun

    evaluation = Evaluation.objects.filter(name=name).order_by("-created_at").first()
    if evaluation is None:
        raise SystemExit(f"No evaluation called {name!r} in this knowledge base.")
    recorded = {**{key: getattr(settings, key) for key in RETRIEVAL}, **evaluation.settings}
    again = retrieval_again(recorded)
    items = {item.question: item for item in load_golden(golden)}
    cases, skipped = [], Counter()
    for run in QueryRun.objects.filter(evaluation=evaluation).order_by("created_at"):
        item = items.get(run.query)
        if item is None or not item.answerable:
            continue
        reason, case = _case(run, item, again)
        if case is None:
            skipped[reason] += 1
            continue
        cases.append(case)
        if limit and len(cases) >= limit:
            break
    return cases, dict(skipped)


def _case(run, item, again) -> tuple[str, Case | None]:
    retrievals = list(run.events.filter(kind="retrieve").order_by("seq"))
    generate = run.events.filter(kind="generate").order_by("seq").first()
    if len(retrievals) != 1:
        return "broadened or follow-up", None
    if generate is None or generate.payload.get("fallback"):
        return "no draft", None
    found = retrievals[0].payload
    if found.get("unknown_names"):
        return "no draft", None
    hits = [doc["chunk_id"] for doc in found["documents"]]
    docs = again(run.query, hits, found.get("hypothesis", ""))
    if docs is None:
        return "hits not found again", None
    grades = list(run.events.filter(kind="grade").order_by("seq"))
    # The writer's documents block held the hits the judge read (graph.md, "grade_docs").
    read = [
        doc for doc, grade in zip(docs, grades, strict=True) if not grade.payload["prefiltered"]
    ]
    passed = {grade.payload["document"]["chunk_id"] for grade in grades if grade.payload["passed"]}
    usable = [n for n, doc in enumerate(read, 1) if doc.chunk_id in passed]
    meta = run.response_metadata or {}
    recorded = meta.get("draft_answer") or run.answer or ""
    return "", Case(item, read, usable, recorded)


def replay(cases: list[Case], variants: list[str]) -> dict[str, list[dict]]:
    """Each variant's draft for each case, and whether it holds every expected fact."""
    from django.conf import settings

    from ragapp.graph.context import Usage
    from ragapp.graph.judges import text_reply
    from ragapp.graph.repetition import repeats_already
    from ragapp.providers.chat import get_chat_models

    writer = get_chat_models().generator
    report: dict[str, list[dict]] = {variant: [] for variant in ["recorded", *variants]}
    started = time.monotonic()
    for number, case in enumerate(cases, 1):
        report["recorded"].append(_row(case, case.recorded))
        for variant in variants:
            model, messages = _asked(writer, case, variant)
            reply = text_reply(
                model,
                messages,
                usage=Usage(),
                max_tokens=settings.RAG_ANSWER_MAX_TOKENS or None,
                stop_when=repeats_already,
            )
            report[variant].append(_row(case, reply.text))
        right = {v: report[v][-1]["right"] for v in variants}
        elapsed = time.monotonic() - started
        print(f"{number}/{len(cases)} {case.item.id} {right} {elapsed:.0f} s", flush=True)
    return report


def _row(case: Case, text: str) -> dict:
    from ragapp.evaluation.metrics import fact_present

    right = all(fact_present(fact, text) for fact in case.item.facts)
    return {"id": case.item.id, "right": right, "text": text}


def _asked(writer, case: Case, variant: str):
    from langchain_core.messages import AIMessage, HumanMessage

    from ragapp.graph import prompts

    messages = prompts.generate_messages(case.item.question, case.documents, case.usable)
    if variant == "question-last":
        system, body = messages
        again = f"\n\nThe question, once more: {prompts.defuse(case.item.question)}"
        return writer, [system, HumanMessage(body.content + again)]
    if variant == "source-first":
        return writer, [*messages, AIMessage(SOURCE_FIRST)]
    if variant.startswith("bias:"):
        bias = float(variant.removeprefix("bias:"))
        tokens = _specific_tokens(writer, [case.documents[n - 1] for n in case.usable])
        return writer.bind(logit_bias={str(token): bias for token in tokens}), messages
    return writer, messages


def _specific_tokens(writer, documents: list) -> set[int]:
    """The tokens of the documents' specifics, as the writer's llama.cpp server splits them."""
    from ragapp.graph.grounding import _specifics

    if not getattr(writer, "openai_api_base", None):
        raise SystemExit("bias:B needs a writer on a llama.cpp server (RAG_CHAT_PROVIDER=local).")
    base = str(writer.openai_api_base).removesuffix("/").removesuffix("/v1")
    key = writer.openai_api_key.get_secret_value() if writer.openai_api_key else ""
    tokens: set[int] = set()
    for doc in documents:
        for specific in set(_specifics(doc.excerpt or doc.text)):
            for form in (specific, f" {specific}"):
                body = json.dumps({"content": form, "with_pieces": True}).encode()
                request = urllib.request.Request(
                    f"{base}/tokenize",
                    data=body,
                    headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
                )
                with urllib.request.urlopen(request, timeout=30) as response:
                    pieces = json.load(response)["tokens"]
                tokens.update(
                    piece["id"] for piece in pieces if sum(c.isalnum() for c in piece["piece"]) >= 2
                )
    return tokens


def summary(report: dict[str, list[dict]], cases: list[Case]) -> str:
    """Right drafts per variant, and the questions each won and lost against `base`."""
    n = len(cases)
    base = report["base"]
    lines = [f"{'variant':<16} right of {n}  won  lost"]
    for variant, rows in report.items():
        right = sum(row["right"] for row in rows)
        won = [r["id"] for r, b in zip(rows, base, strict=True) if r["right"] and not b["right"]]
        lost = [r["id"] for r, b in zip(rows, base, strict=True) if b["right"] and not r["right"]]
        line = f"{variant:<16} {right:>8}  {len(won):>4}  {len(lost):>4}"
        if won or lost:
            line += f"   won {', '.join(won) or '-'}; lost {', '.join(lost) or '-'}"
        lines.append(line)
    return "\n".join(lines)


if __name__ == "__main__":
    main()
