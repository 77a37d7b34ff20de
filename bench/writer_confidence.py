"""The writer's own confidence in the specifics it wrote, as a signal for the answer check.

A small model that guesses a value ("The default value is 3.") often writes it with a low
token probability, and one that copies it from the documents with a high one. This benchmark
measures whether that tells the answer check anything its verdicts do not:

- `record` runs `manage.py eval_rag GOLDEN --name NAME` in this process, with the graph's
  generate call (and only it) asking the writer for each token's probability
  (`logprobs=True`; the reply is read whole rather than streamed, which changes no answer:
  the loop cut gives the same text). Each draft becomes one JSON line of OUT.
- `analyse` joins those lines with the evaluation's runs (in order; a run that fell back wrote
  no draft), replays each run's claims check from its recorded verdicts (the lexical veto,
  then P(the documents state it) per sentence, pruning, the second check), checks that the
  replay ends every run as it really ended, and prints the outcomes under each rule:
  - **rescue (t, floor)**: a doubted sentence (P under the threshold, at least `floor`) whose
    every specific the writer wrote with a first-token probability of at least `t` is kept;
  - **veto (t)**: a sentence holding a specific written with a probability under `t` is cut,
    as the lexical check cuts a specific the documents lack.

A specific is what the lexical check calls one (`grounding.SPECIFIC`) or any number; its
probability is that of its first token with a letter or digit inside it (a backtick says nothing).
A claim the replay needs and the run never judged counts as doubted (reported).

    RAG_RUN_MAX_SECONDS=900 uv run python bench/writer_confidence.py record conf-docs \\
        tests/eval/golden_docs.jsonl bench/out/conf-docs.jsonl          # a whole-set run
    uv run python bench/writer_confidence.py analyse conf-docs \\
        tests/eval/golden_docs.jsonl bench/out/conf-docs.jsonl          # seconds, no model
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
THRESHOLD = 0.35  # the claims check's threshold with the local default
_NUMBER = re.compile(r"\b\d+(?:\.\d+)*\b")
_CONTENT = re.compile(r"[A-Za-z0-9]")
RULES = (
    [{}]
    + [{"veto": t} for t in (0.3, 0.4, 0.5)]
    + [{"rescue": t, "floor": f} for t in (0.8, 0.9, 0.95, 0.99) for f in (0.0, 0.2, 0.3)]
)


def setup() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def record(name: str, golden: str, out: Path) -> None:
    """Run the evaluation with the writer's token probabilities written to `out`."""
    from django.core.management import call_command

    from ragapp.graph import judges, nodes

    product = nodes.text_reply
    out.parent.mkdir(parents=True, exist_ok=True)
    sink = out.open("w")

    def with_probabilities(model, messages, *, usage, max_tokens=None, stop_when=None, **kw):
        if stop_when is None:  # not the writer: every judge call goes on as in the product
            return product(model, messages, usage=usage, max_tokens=max_tokens, **kw)
        bound = model.bind(logprobs=True, **({"max_tokens": max_tokens} if max_tokens else {}))
        message = bound.invoke(messages)
        usage.add(judges.model_name(model), message)
        content = (message.response_metadata.get("logprobs") or {}).get("content") or []
        text = judges._text(message.content)
        sink.write(
            json.dumps({"text": text, "tokens": [[t["token"], t["logprob"]] for t in content]})
        )
        sink.write("\n")
        sink.flush()
        cut = message.response_metadata.get("finish_reason") == "length"
        return judges.TextReply(text.strip(), cut, False)

    nodes.text_reply = with_probabilities
    try:
        call_command("eval_rag", golden, name=name)
    finally:
        nodes.text_reply = product
        sink.close()


def sentence_confidence(text: str, tokens: list) -> dict[str, list[float]]:
    """Each sentence of `text` (as `claim_text` writes it): its specifics' first-token P."""
    from ragapp.graph import grounding as g

    offsets, written = [], ""
    for token, logprob in tokens:
        offsets.append((len(written), len(written) + len(token), math.exp(logprob), token))
        written += token
    if written != text:
        return {}  # the tokens do not spell the reply: no signal rather than a wrong one
    cites = [m.span() for m in g.CITATION.finditer(text)]
    spans = [m.span() for m in g.SPECIFIC.finditer(text)] + [
        m.span() for m in _NUMBER.finditer(text)
    ]
    spans = [s for s in spans if not any(a <= s[0] < b for a, b in cites)]
    found, at = {}, 0
    for piece in g.SENTENCE_END.split(text):
        start = text.find(piece, at)
        end = at = start + len(piece)
        probabilities = []
        for a, b in spans:
            if start <= a and b <= end:
                first = [
                    p
                    for x, y, p, t in offsets
                    if y > a and x < b and _CONTENT.search(t[max(a - x, 0) : b - x])
                ]
                if first:
                    probabilities.append(first[0])
        found[g.claim_text(piece)] = probabilities
    return found


def joined(name: str, golden: str, recorded: Path) -> list[dict]:
    """The evaluation's runs that wrote a draft, each with its draft, verdicts and outcome."""
    from ragapp.evaluation.golden import load_golden
    from ragapp.evaluation.metrics import facts_accuracy
    from ragapp.graph import grounding as g
    from ragapp.graph.drafts import draft_of
    from ragapp.models import Evaluation, QueryRun

    items = {item.question: item for item in load_golden(golden)}
    drafts = iter([json.loads(line) for line in recorded.open()])
    evaluation = Evaluation.objects.filter(name=name).order_by("-pk").first()
    rows = []
    for run in QueryRun.objects.filter(evaluation=evaluation).order_by("created_at"):
        generate = run.events.filter(kind="generate").first()
        if generate is None or generate.payload.get("fallback"):
            continue  # no model call, no line
        draft_record = next(drafts, None)
        if draft_record is None:
            raise SystemExit(f"{recorded} holds fewer drafts than {name}'s runs wrote")
        item = items.get(run.query)
        checks = []
        for event in run.events.filter(kind="grade_answer").order_by("seq"):
            verdicts = re.search(
                r"P\(the documents state it\): ([\d.; ]+)", event.payload["reasoning"]
            )
            checks.append(
                {
                    "ps": [float(p) for p in verdicts.group(1).split(";")] if verdicts else None,
                    "flagged": event.payload["problematic_claims"],
                    "declined": event.payload["declined"],
                }
            )
        if item is None or not checks:
            continue
        # As `generate` made its draft (drafts.draft_of): no tags, no unfinished tail, no loop.
        capped = bool(generate.payload.get("capped"))
        draft = draft_of(draft_record["text"].strip(), capped=capped).answer
        verdicts = {}
        if checks[0]["ps"]:
            verdicts.update(zip(g.answer_claims(draft), checks[0]["ps"], strict=False))
        if len(checks) > 1 and checks[1]["ps"]:
            pruned = g.prune(draft, checks[0]["flagged"])
            for claim, p in zip(g.answer_claims(pruned), checks[1]["ps"], strict=False):
                verdicts.setdefault(claim, p)
        if run.status == "answered":
            ended = (
                ("right" if facts_accuracy(item.facts, run.answer) else "wrong")
                if item.answerable
                else "answered"
            )
        else:
            ended = "refused"
        rows.append(
            {
                "id": item.id,
                "answerable": item.answerable,
                "facts": item.facts,
                "ended": ended,
                "draft": draft,
                "checks": checks,
                "verdicts": verdicts,
                "confidence": sentence_confidence(draft_record["text"], draft_record["tokens"]),
            }
        )
    return rows


def replay(row: dict, rule: dict, unjudged: collections.Counter) -> str:
    """How the run ends under `rule`: right, wrong, answered (unanswerable) or refused."""
    from ragapp.evaluation.metrics import facts_accuracy
    from ragapp.graph import grounding as g

    def doubted(text: str, first: bool) -> list[str]:
        claims = g.answer_claims(text)
        vetoed = [c for c in row["checks"][0]["flagged"] if first and c.endswith(g.MISSING)]
        if rule.get("veto"):
            vetoed += [c for c in claims if min(row["confidence"].get(c) or [1]) < rule["veto"]]
        if vetoed:
            return vetoed  # the lexical stage fails the answer with no model call
        flagged = []
        for claim in claims:
            p = row["verdicts"].get(claim)
            if p is None:
                unjudged[row["id"]] += 1
                flagged.append(claim)
            elif p < THRESHOLD:
                sure = row["confidence"].get(claim) or []
                if (
                    rule.get("rescue")
                    and p >= rule["floor"]
                    and sure
                    and min(sure) >= rule["rescue"]
                ):
                    continue
                flagged.append(claim)
        return flagged

    def ended(answer: str | None) -> str:
        if answer is None:
            return "refused"
        if not row["answerable"]:
            return "answered"
        return "right" if facts_accuracy(row["facts"], answer) else "wrong"

    if row["checks"][0]["declined"]:
        return "refused"
    first = doubted(row["draft"], True)
    if not first:
        return ended(row["draft"])
    pruned = g.prune(row["draft"], first)
    if not pruned or doubted(pruned, False):
        return ended(None)
    return ended(pruned)


def analyse(name: str, golden: str, recorded: Path) -> None:
    rows = joined(name, golden, recorded)
    unjudged = collections.Counter()
    faithful = sum(replay(row, {}, unjudged) == row["ended"] for row in rows)
    print(f"{name}: {len(rows)} drafts; the replay ends {faithful} of them as they ended")
    for rule in RULES:
        unjudged.clear()
        ends = {row["id"]: replay(row, rule, unjudged) for row in rows}
        counts = collections.Counter(ends.values())
        changed = [
            f"{row['id']} {row['ended']}->{ends[row['id']]}"
            for row in rows
            if ends[row["id"]] != row["ended"]
        ]
        label = ", ".join(f"{k} {v}" for k, v in rule.items()) or "the product"
        print(
            f"  {label:22} {dict(sorted(counts.items()))} changed: {', '.join(changed) or 'none'}"
        )
        if unjudged:
            print(f"  {'':22} claims never judged, counted as doubted: {dict(unjudged)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["record", "analyse"])
    parser.add_argument("name", help="the evaluation's name (eval_rag --name)")
    parser.add_argument("golden")
    parser.add_argument("recorded", type=Path, help="the drafts' JSON lines")
    args = parser.parse_args()
    setup()
    if args.action == "record":
        record(args.name, args.golden, args.recorded)
    else:
        analyse(args.name, args.golden, args.recorded)


if __name__ == "__main__":
    main()
