"""The writer alone, written again on an evaluation's recorded retrievals, under named variants.

A lever on the writer (what it is told, how it decodes) can be measured without whole runs of
the graph, which take 25-35 minutes a set with the local models. For every answerable question of
GOLDEN whose run in evaluation NAME wrote a draft from its first and only retrieval:

- the documents the writer read are made again (`export_drafts.retrieval_again`: the recorded
  hits, found again with the recorded passage and cut to excerpts as the graph cuts them), and
  the recorded grades say which of them it could use;
- the configured writer writes the answer again under each variant, a question at a time, with
  the evaluation's answer cap (RAG_ANSWER_MAX_TOKENS);
- a draft is **right** when what the graph keeps of the reply (no unfinished tail, no
  repetition) holds every expected fact (`facts_accuracy`, the metric's own test).

The answer check is not run, so a count is what the writer states, not what a run would show:
a variant that wins here still has to win whole runs (`manage.py eval_rag`). `base` is the
product's writer, written in the same run or taken from an earlier replay's `--json` file
(`--against`); every other variant is reported against it, with the questions it won and lost.
The run's answer is scored too (after its refinement, when it had one). The same writer on the
same documents parts from its first drafts on a question or two in forty (most likely a prompt
read from the server's cache in the run and cold here): the noise a variant's count must clear.

Variants:
- `base`: the product's prompt and decoding;
- `question-last`: the question said once more after the task, nearest to the answer;
- `source-first`: the reply begun for the model as "According to document [", so that it names
  the document it answers from before it answers (the server continues the started reply);
- `no-parts`: the writer's task without its sentence "If the question asks more than one
  thing, answer each of them." (added in a bundle on 2026-12-02; first measured alone in stop
  60);
- `first`: the writer's task opened with "Document [1] is the one most likely to hold the
  answer." (the retrieval's first hit, no model call), a pointer for a writer that answers from
  the wrong document;
- `point`: the same pointer to the document the model itself names, asked first over the same
  cached documents "Which document answers the question? Reply with its number only." (one
  output token; the number with the highest probability among the documents', 1 without one);
- `sample:T:S`: the product's prompt, sampled at temperature T with seed S instead of greedy.
  With two seeds or more the summary adds how many questions at least one of the drafts (`base`
  and the sampled ones) got right, the ceiling of any rule that picks one of them, and how many
  the consensus pick got right: the draft whose words the others share most (minimum Bayes risk
  with a word-overlap F1; no model call);
- `oracle`: a diagnostic, never a lever: the writer shown only the documents that hold an
  expected fact (as the golden set names them), in a documents block of their own, whenever
  the documents shown hold every expected fact between them (the question is otherwise asked
  as `base`). What the writer gains from reading no distractor at all is the ceiling of any
  lever that chooses what it reads among the same hits (stop 71: 93 against 88 of the 111
  questions of three tuning sets with every fact shown);
- `bias:B`: a logit bias of B on every token of the usable documents' specifics (the names,
  options and values `grounding` looks for, as the documents spell them; only tokens with two
  letters or digits or more), to nudge the writer to the documents' own words. Needs a server
  that tokenizes (`local`).

    RAG_DATA_DIR=/work/corpora/openssl-data uv run python bench/writer_replay.py conf-openssl \\
        bench/golden/openssl30.jsonl --variants base,question-last,bias:1
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import urllib.request
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

VARIANTS = (
    "base",
    "question-last",
    "source-first",
    "no-parts",
    "first",
    "point",
    "oracle",
    "sample:T:S",
    "bias:B",
)
# The sentence of the writer's task that `no-parts` leaves out.
PARTS_SENTENCE = "If the question asks more than one thing, answer each of them. "
# What `point` asks before the answer, and how `first` and `point` open the writer's task.
POINT_TASK = "Which document answers the question? Reply with its number only."
POINTER = "Document [{n}] is the one most likely to hold the answer. "
# How `source-first` begins the reply the writer continues.
SOURCE_FIRST = "According to document ["


class Case(NamedTuple):
    """One answerable question, the documents its writer read, and the draft it wrote."""

    item: object  # a GoldenItem
    question: str  # as the writer was asked it
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
    parser.add_argument(
        "--against",
        type=Path,
        help="take the `base` drafts from this earlier --json file instead of writing them again",
    )
    args = parser.parse_args()
    variants = list(dict.fromkeys(v.strip() for v in args.variants.split(",") if v.strip()))
    for variant in variants:
        _check_variant(variant)
    if args.json:
        # bench/out/ is not in a fresh clone; a replay that cannot keep its drafts fails first.
        args.json.parent.mkdir(parents=True, exist_ok=True)
    setup()
    cases, skipped = replayable(args.evaluation, args.golden, limit=args.limit)
    print(f"{len(cases)} questions replayed; left out: {dict(skipped) or 'none'}", flush=True)
    earlier = _earlier_base(args.against, cases) if args.against else None
    if earlier is None and "base" not in variants:
        variants.insert(0, "base")
    written = [v for v in variants if not (earlier and v == "base")]
    report = replay(
        cases, written, answer_max_tokens=answer_cap(args.evaluation), progress=args.json
    )
    if earlier:
        answers = report.pop("the run's answer")
        report = {"the run's answer": answers, "base": earlier, **report}
    print(summary(report, cases))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


def _earlier_base(path: Path, cases: list[Case]) -> list[dict]:
    """The `base` drafts of an earlier replay of the same questions (its --json file)."""
    rows = json.loads(path.read_text()).get("base") or []
    if [row["id"] for row in rows] != [case.item.id for case in cases]:
        raise SystemExit(f"{path} holds no base drafts for these questions; replay them again.")
    return rows


def _check_variant(variant: str) -> None:
    if variant in VARIANTS and ":" not in variant:  # the variants with no parameter
        return
    if variant.startswith("sample:"):
        try:
            temperature, seed = variant.removeprefix("sample:").split(":")
            if 0 < float(temperature) < math.inf and int(seed) >= 0:
                return
        except ValueError:
            pass
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


def answer_cap(name: str) -> int:
    """The RAG_ANSWER_MAX_TOKENS the evaluation ran with (this shell's, if it did not say)."""
    from django.conf import settings

    from ragapp.models import Evaluation

    evaluation = Evaluation.objects.filter(name=name).order_by("-created_at").first()
    return evaluation.settings.get("RAG_ANSWER_MAX_TOKENS", settings.RAG_ANSWER_MAX_TOKENS)


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
    from export_drafts import searches

    retrievals = searches(run)
    generate = run.events.filter(kind="generate").order_by("seq").first()
    if len(retrievals) != 1:
        return "not one retrieval", None
    if generate is None or generate.payload.get("fallback"):
        return "no draft", None
    found = retrievals[0].payload
    hits = [doc["chunk_id"] for doc in found["documents"]]
    meta = run.response_metadata or {}
    # What the graph searched and asked; eval_rag's runs are never follow-ups, but a run of
    # the portal's could be (graph.md, "condense").
    question = meta.get("standalone_question") or run.query
    docs = again(question, hits, found.get("hypothesis", ""))
    if docs is None:
        return "hits not found again", None
    grades = list(run.events.filter(kind="grade").order_by("seq"))
    if len(grades) != len(docs):
        return "grades not recorded", None
    # The writer's documents block held the hits the judge read (graph.md, "grade_docs").
    read = [
        doc for doc, grade in zip(docs, grades, strict=True) if not grade.payload.get("prefiltered")
    ]
    passed = {
        grade.payload["document"]["chunk_id"] for grade in grades if grade.payload.get("passed")
    }
    usable = [n for n, doc in enumerate(read, 1) if doc.chunk_id in passed]
    # The run's answer, or the draft it withheld: after the refinement, when there was one.
    recorded = meta.get("draft_answer") or run.answer or ""
    return "", Case(item, question, read, usable, recorded)


def replay(
    cases: list[Case], variants: list[str], answer_max_tokens: int = 0, progress: Path | None = None
) -> dict[str, list[dict]]:
    """Each variant's draft for each case, and whether it holds every expected fact.

    With `progress`, the drafts so far are written there after every question, so that a replay
    stopped part way (they take a minute or more a question) keeps what it wrote.

    A draft is what the graph keeps of the reply (`drafts.draft_of`, as nodes.generate makes
    it): without the tags a small model copies, without an unfinished tail when it ran into the
    cap, without repetition.
    """
    from ragapp.graph.context import Usage
    from ragapp.graph.drafts import draft_of, repeating
    from ragapp.graph.judges import text_reply
    from ragapp.providers.chat import get_chat_models

    writer = get_chat_models().generator
    if any(v.startswith("bias:") for v in variants) and not getattr(writer, "openai_api_base", ""):
        raise SystemExit("bias:B needs a writer on a llama.cpp server (RAG_CHAT_PROVIDER=local).")
    report: dict[str, list[dict]] = {variant: [] for variant in ["the run's answer", *variants]}
    started = time.monotonic()
    for number, case in enumerate(cases, 1):
        report["the run's answer"].append(_row(case, case.recorded))
        for variant in variants:
            model, messages = _asked(writer, case, variant)
            reply = text_reply(
                model,
                messages,
                usage=Usage(),
                max_tokens=answer_max_tokens or None,
                # As the graph stops a looping answer (nodes.generate).
                stop_when=repeating,
            )
            report[variant].append(_row(case, draft_of(reply.text, capped=reply.cut).answer))
        if progress:
            progress.write_text(json.dumps(report, indent=1))
        right = {v: report[v][-1]["right"] for v in variants}
        elapsed = time.monotonic() - started
        print(f"{number}/{len(cases)} {case.item.id} {right} {elapsed:.0f} s", flush=True)
    return report


def _row(case: Case, text: str) -> dict:
    from ragapp.evaluation.metrics import facts_accuracy

    return {"id": case.item.id, "right": facts_accuracy(case.item.facts, text), "text": text}


def _asked(writer, case: Case, variant: str):
    from langchain_core.messages import AIMessage, HumanMessage

    from ragapp.graph import prompts

    messages = prompts.generate_messages(case.question, case.documents, case.usable)
    if variant == "question-last":
        system, body = messages
        restated = f"\n\nThe question, once more: {prompts.defuse(case.question)}"
        return writer, [system, HumanMessage(body.content + restated)]
    if variant == "source-first":
        return writer, [*messages, AIMessage(SOURCE_FIRST)]
    if variant == "no-parts":
        system, body = messages
        if PARTS_SENTENCE not in body.content:
            raise SystemExit("The writer's task no longer holds the sentence no-parts removes.")
        return writer, [system, HumanMessage(body.content.replace(PARTS_SENTENCE, "", 1))]
    if variant in ("first", "point"):
        system, body = messages
        # The task is the prompt's last paragraph, after the shared documents and question.
        prefix, task = body.content.rsplit("\n\n", 1)
        number = 1 if variant == "first" else _pointed(writer, system, prefix, case)
        pointed = f"{prefix}\n\n{POINTER.format(n=number)}{task}"
        return writer, [system, HumanMessage(pointed)]
    if variant == "oracle":
        holders = oracle_documents(case)
        if holders is None:
            return writer, messages
        return writer, prompts.generate_messages(case.question, holders)
    if variant.startswith("sample:"):
        temperature, seed = variant.removeprefix("sample:").split(":")
        return writer.bind(temperature=float(temperature), seed=int(seed)), messages
    if variant.startswith("bias:"):
        bias = float(variant.removeprefix("bias:"))
        tokens = _specific_tokens(writer, [case.documents[n - 1] for n in case.usable])
        return writer.bind(logit_bias={str(token): bias for token in tokens}), messages
    return writer, messages


def oracle_documents(case: Case) -> list | None:
    """The documents shown to `case`'s writer that hold an expected fact, or None.

    None when they do not hold every expected fact between them: no choice among the same hits
    could then show the answer. A document is what the writer read of it: its section path and
    its excerpt (or its chunk, when shown whole).
    """
    from ragapp.evaluation.metrics import fact_present

    facts = case.item.facts
    shown = [(doc, f"{doc.heading_path}\n{doc.excerpt or doc.text}") for doc in case.documents]
    if not all(any(fact_present(fact, text) for _, text in shown) for fact in facts):
        return None
    return [doc for doc, text in shown if any(fact_present(fact, text) for fact in facts)]


def _pointed(writer, system, prefix: str, case: Case) -> int:
    """The document the writer names as answering, asked over the same cached documents."""
    from langchain_core.messages import HumanMessage

    asked = [system, HumanMessage(f"{prefix}\n\n{POINT_TASK}")]
    reply = writer.bind(logprobs=True, top_logprobs=10, max_tokens=1).invoke(asked)
    content = (reply.response_metadata.get("logprobs") or {}).get("content") or []
    return pointed_number(
        content[0].get("top_logprobs", []) if content else [], len(case.documents)
    )


def pointed_number(candidates: list[dict], documents: int) -> int:
    """The most probable document number among a reply's first-token candidates, else 1."""
    best, number = -math.inf, 1
    for candidate in candidates:
        token = candidate["token"].strip().strip("[]")
        if token.isdigit() and 1 <= int(token) <= documents and candidate["logprob"] > best:
            best, number = candidate["logprob"], int(token)
    return number


def _specific_tokens(writer, documents: list) -> set[int]:
    """The tokens of the documents' specifics, as the writer's llama.cpp server splits them."""
    base = str(writer.openai_api_base).removesuffix("/").removesuffix("/v1")
    key = writer.openai_api_key.get_secret_value() if writer.openai_api_key else ""
    tokens: set[int] = set()
    for doc in documents:
        for specific in spellings(doc.excerpt or doc.text):
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


def spellings(text: str) -> set[str]:
    """The specifics the lexical check reads in `text`, as `text` spells them.

    `grounding` compares them case-folded; a nudge toward the documents' words must push their
    own spelling (`authorityInfoAccess`, not `authorityinfoaccess`).
    """
    import re

    from ragapp.graph.grounding import specifics

    found = set()
    for specific in set(specifics(text)):
        found.update(m.group(0) for m in re.finditer(re.escape(specific), text, re.IGNORECASE))
    return found


def summary(report: dict[str, list[dict]], cases: list[Case]) -> str:
    """Right drafts per variant, and the questions each won and lost against `base`."""
    n = len(cases)
    base = report["base"]
    lines = [f"{'variant':<16} right of {n}  won  lost"]
    lines += [_against(variant, rows, base) for variant, rows in report.items()]
    sampled = [rows for variant, rows in report.items() if variant.startswith("sample:")]
    if len(sampled) > 1:
        drafts = [base, *sampled]
        # Right in at least one draft: what a rule choosing among them could reach.
        ceiling = [
            next((rows[i] for rows in drafts if rows[i]["right"]), base[i]) for i in range(n)
        ]
        lines.append(_against(f"any of {len(drafts)} drafts", ceiling, base))
        picked = [drafts[consensus([rows[i]["text"] for rows in drafts])][i] for i in range(n)]
        lines.append(_against("consensus pick", picked, base))
    return "\n".join(lines)


def _against(label: str, rows: list[dict], base: list[dict]) -> str:
    """One summary line: the drafts right, and the questions won and lost against `base`."""
    right = sum(row["right"] for row in rows)
    won = [r["id"] for r, b in zip(rows, base, strict=True) if r["right"] and not b["right"]]
    lost = [r["id"] for r, b in zip(rows, base, strict=True) if b["right"] and not r["right"]]
    line = f"{label:<16} {right:>8}  {len(won):>4}  {len(lost):>4}"
    if won or lost:
        line += f"   won {', '.join(won) or '-'}; lost {', '.join(lost) or '-'}"
    return line


def consensus(texts: list[str]) -> int:
    """The index of the draft whose words the other drafts share most (the first on a tie).

    Minimum Bayes risk over the drafts with a word-overlap F1: a fact most drafts state is
    more likely read from the documents than one a single sample made up.
    """
    import re

    # A word ends on a letter or digit: "9000." at a sentence's end is "9000".
    words = [set(re.findall(r"[\w./-]*\w", text.lower())) for text in texts]

    def f1(a: set[str], b: set[str]) -> float:
        shared = len(a & b)
        return 2 * shared / (len(a) + len(b)) if shared else 0.0

    scores = [
        sum(f1(mine, theirs) for j, theirs in enumerate(words) if j != i)
        for i, mine in enumerate(words)
    ]
    return scores.index(max(scores))


if __name__ == "__main__":
    main()
