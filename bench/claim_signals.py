"""Per-claim signals of the answer check on the labelled answers, for choosing a decision rule.

For every faithfulness item of bench/judge_set.jsonl it records, with the packaged 1.5B model:

- the lexical veto (does a named specific of the answer appear in no document?);
- for each claim of the answer (`answer_claims`), the product's P(yes) that the documents state
  it (`claim_support_messages`, over the shared documents prefix), and the model's P(yes) that the
  claim is correct with no documents at all (its prior belief).

A claim the model believes whatever the documents say has a high prior; one the documents
support gains from reading them. The difference is the "context-aware" signal of contrastive
decoding work. The records go to a JSON-lines file; `--analyse` reads one back and prints, per
decision rule and threshold, the share of unfaithful answers caught and faithful ones passed,
for the tuning origins and the held-out ones apart, choosing each rule's threshold on the
tuning origins only.

    uv run python bench/claim_signals.py --out bench/out/claim_signals.jsonl   # ~30 minutes
    uv run python bench/claim_signals.py --analyse bench/out/claim_signals.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the project, for config

SET = Path(__file__).resolve().parent / "judge_set.jsonl"
HELD_OUT = "(held out)"  # origins whose name says so are never used to choose anything


def prior_messages(question: str, claim: str):
    from langchain_core.messages import HumanMessage, SystemMessage

    return [
        SystemMessage("You are a careful assistant for support engineers."),
        HumanMessage(
            f"Question: {question}\n\nClaim: {claim}\n\n"
            "Is this claim correct? Answer with one word: yes or no."
        ),
    ]


def record(out: Path) -> None:
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from ragapp.graph import prompts
    from ragapp.graph.context import Usage
    from ragapp.graph.grounding import answer_claims
    from ragapp.graph.judges import lexical_verdict, yes_probability
    from ragapp.graph.state import RetrievedDoc
    from ragapp.providers.local_llm import local_chat_model

    model = local_chat_model("qwen2.5-coder-1.5b")
    items = [json.loads(line) for line in SET.read_text().splitlines() if line.strip()]
    items = [i for i in items if i["kind"] == "faithfulness" and i.get("faithful") is not None]
    with out.open("w") as sink:
        for index, item in enumerate(items, 1):
            started = time.perf_counter()
            docs = [
                RetrievedDoc(n, n, "Docs", "docs/set.md", "", text, 1.0)
                for n, text in enumerate(item["documents"], 1)
            ]
            usable = list(range(1, len(docs) + 1))
            lexical = lexical_verdict(item["question"], item["answer"], docs)
            claims = []
            for claim in answer_claims(item["answer"]):
                supported = yes_probability(
                    model,
                    prompts.claim_support_messages(item["question"], docs, claim, usable),
                    usage=Usage(),
                )
                prior = yes_probability(
                    model, prior_messages(item["question"], claim), usage=Usage()
                )
                claims.append({"claim": claim, "p_docs": supported, "p_prior": prior})
            row = {
                "origin": item.get("origin", "hand-written, docs/"),
                "faithful": item["faithful"],
                "veto": bool(lexical.problematic_claims),
                "claims": claims,
            }
            sink.write(json.dumps(row) + "\n")
            sink.flush()
            print(
                f"{index}/{len(items)} {time.perf_counter() - started:5.1f} s "
                f"veto={row['veto']} "
                + " ".join(f"{c['p_docs']:.2f}/{c['p_prior']:.2f}" for c in claims),
                flush=True,
            )


RULES = {
    # The product's rule: the weakest claim's P(the documents state it).
    "min p_docs": lambda cs: min(c["p_docs"] for c in cs),
    # How much reading the documents raised the weakest claim's belief.
    "min (p_docs - p_prior)": lambda cs: min(c["p_docs"] - c["p_prior"] for c in cs),
    "min p_docs, less half the prior": lambda cs: min(c["p_docs"] - 0.5 * c["p_prior"] for c in cs),
    "mean p_docs": lambda cs: sum(c["p_docs"] for c in cs) / len(cs),
    "first claim p_docs": lambda cs: cs[0]["p_docs"],
}


def passes(row: dict, rule, threshold: float) -> bool:
    if row["veto"]:
        return False
    if not row["claims"]:
        return True  # nothing but code and headings: the specifics (all found) decide
    return rule(row["claims"]) >= threshold


def figures(rows: list[dict], rule, threshold: float) -> tuple[float, float, int, int]:
    bad = [r for r in rows if not r["faithful"]]
    good = [r for r in rows if r["faithful"]]
    caught = sum(not passes(r, rule, threshold) for r in bad) / len(bad) if bad else float("nan")
    passed = sum(passes(r, rule, threshold) for r in good) / len(good) if good else float("nan")
    return caught, passed, len(bad), len(good)


def analyse(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    tuning = [r for r in rows if HELD_OUT not in r["origin"]]
    held = [r for r in rows if HELD_OUT in r["origin"]]
    grid = [round(x * 0.01, 2) for x in range(-50, 100)]
    print(f"{len(rows)} answers: {len(tuning)} for tuning, {len(held)} held out")
    print("rule                              threshold | tuning caught/passed | held out")
    for name, rule in RULES.items():
        # Chosen on the tuning answers only: the most caught among thresholds passing >= 0.90
        # of the faithful ones (else the best balanced accuracy).
        def key(t, rule=rule):
            caught, passed, _, _ = figures(tuning, rule, t)
            return (passed >= 0.90, caught + passed if passed < 0.90 else caught, passed)

        best = max(grid, key=key)
        tc, tp, _, _ = figures(tuning, rule, best)
        hc, hp, hb, hg = figures(held, rule, best)
        print(
            f"{name:<33} {best:9.2f} | {tc:.3f} / {tp:.3f}        | "
            f"{hc:.3f} / {hp:.3f} ({hb} + {hg})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--analyse", type=Path)
    args = parser.parse_args()
    if args.out:
        record(args.out)
    if args.analyse:
        analyse(args.analyse)


if __name__ == "__main__":
    main()
