"""Per-claim signals of the answer check on the labelled answers, for choosing a decision rule.

For every faithfulness item of bench/judge_set.jsonl it records, with the packaged 1.5B model:

- the lexical veto (does a named specific of the answer appear in no document?);
- for each claim of the answer (`answer_claims`), the product's P(yes) that the documents state
  it (`claim_support_messages`, over the shared documents prefix), and the model's P(yes) that the
  claim is correct with no documents at all (its prior belief).

More signals on request (`--signals`), each measured in docs/evaluation.md:

- `focus`: P(yes) that a short passage states the claim, the passage being the few pieces of the
  documents (sentences, list items, code blocks; `excerpts.units`) that name the claim's
  specifics or are closest to it by embedding, at most `FOCUS_BUDGET` characters, asked in a
  prompt of its own (a small model judges a short premise better than five documents);
- `cited`: P(yes) that the documents the sentence cites (`[n]`) state it, over the shared
  prefix, for a sentence that cites some but not all of them (Self-RAG's IsSup proper);
- `context`: P(yes) for a sentence that opens by pointing back ("Its default is 100."), asked
  after the sentence before it (`claims_in_context`); recorded with `docs`, which its rule falls
  back on for the other sentences;
- `point`: asked over the same shared prefix which document states the claim, answered with
  the document's number or 0 for none (`point_messages`); the signal is 1 - P(0) among the
  digits' probabilities, in case a small model points at where a claim is stated better than
  it says "yes" to it;
- `flip`: the same question turned over ("do the documents leave this claim unstated?"), read as
  1 - P(yes), in case the model leans to "yes" on both questions and their mean cancels the
  lean (`flip_messages`);
- `nearest`: no model call; the cosine, with the packaged embedder, between the claim and the
  piece of the documents (`excerpts.units`) nearest to it.

A claim the model believes whatever the documents say has a high prior; one the documents
support gains from reading them. The difference is the "context-aware" signal of contrastive
decoding work. The records go to a JSON-lines file; `--analyse` reads one back and prints, per
decision rule and threshold, the share of unfaithful answers caught and faithful ones passed,
for the tuning origins and the held-out ones apart, choosing each rule's threshold on the
tuning origins only.

    uv run python bench/claim_signals.py --out bench/out/claim_signals.jsonl   # ~30 minutes
    uv run python bench/claim_signals.py --signals docs focus cited --out bench/out/focus.jsonl
    uv run python bench/claim_signals.py --signals docs context --out bench/out/context.jsonl
    uv run python bench/claim_signals.py --signals docs point --per-origin 3 \\
        --out bench/out/point.jsonl
    uv run python bench/claim_signals.py --analyse bench/out/claim_signals.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
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


FOCUS_BUDGET = 600  # characters of the focused passage
FOCUS_NEAREST = 3  # pieces closest to the claim by embedding, beside those naming its specifics
_CITE = re.compile(r"\[(\d{1,2})\]")
_LEADING_CITES = re.compile(r"^\s*((?:\[\d{1,2}\]\s*)+)")


def focus_passage(claim: str, pieces: list[str], vectors: list, claim_vector) -> str:
    """The pieces that name each of the claim's specifics, then the nearest ones, in order."""
    from ragapp.graph.excerpts import _cosine
    from ragapp.graph.grounding import contains_term, folded, specifics

    nearest = sorted(range(len(pieces)), key=lambda i: -_cosine(claim_vector, vectors[i]))
    chosen: list[int] = []
    for term in specifics(claim):
        first = next((i for i in nearest if contains_term(folded(pieces[i]), term)), None)
        if first is not None and first not in chosen:
            chosen.append(first)
    chosen += [i for i in nearest[:FOCUS_NEAREST] if i not in chosen]
    kept, size = [], 0
    for i in chosen:
        if kept and size + len(pieces[i]) > FOCUS_BUDGET:
            break
        kept.append(i)
        size += len(pieces[i])
    return "\n".join(pieces[i] for i in sorted(kept))


def focus_messages(passage: str, claim: str):
    from langchain_core.messages import HumanMessage, SystemMessage

    from ragapp.graph import prompts

    return [
        SystemMessage(prompts.SYSTEM),
        HumanMessage(
            f"<document>\n{prompts.defuse(passage)}\n</document>\n\n"
            f"Claim: {prompts.defuse(claim)}\n\n"
            "Does the document state this claim? Answer with one word: yes or no."
        ),
    ]


POINT_TASK = (
    "Which document above states this claim? Answer with one digit: the document's number, "
    "or 0 if none of them states it."
)


def point_messages(question: str, docs, claim: str):
    """The shared documents prefix, then: which document states `claim` (0 for none)?"""
    from ragapp.graph import prompts

    return prompts._shared(question, docs, f"Claim: {prompts.defuse(claim)}\n\n{POINT_TASK}")


def flip_messages(question: str, docs, claim: str):
    """The shared documents prefix, then the claim check turned over: is the claim unstated?"""
    from ragapp.graph import prompts

    return prompts._shared(
        question,
        docs,
        f"Claim: {prompts.defuse(claim)}\n\n"
        "Do the documents above leave this claim unstated? Answer with one word: yes or no.",
    )


def point_probability(model, messages, documents: int, *, usage) -> float | None:
    """1 - P(0) among the digits 0..`documents` of the first reply token; None without digits."""
    import math

    from ragapp.graph.judges import model_name
    from ragapp.providers.model_errors import explained_failures

    with explained_failures(model):
        message = model.bind(logprobs=True, top_logprobs=10, max_tokens=1).invoke(messages)
    usage.add(model_name(model), message)
    content = (message.response_metadata.get("logprobs") or {}).get("content") or []
    digits = {str(n): 0.0 for n in range(documents + 1)}
    for candidate in content[0].get("top_logprobs", []) if content else []:
        token = candidate["token"].strip()
        if token in digits:
            digits[token] += math.exp(candidate["logprob"])
    total = sum(digits.values())
    return None if total < 1e-6 else 1 - digits["0"] / total


def per_origin(items: list[dict], n: int) -> list[dict]:
    """The first `n` items of each label of each origin, in set order: a small balanced sample."""
    taken: dict = {}
    chosen = []
    for item in items:
        key = (item.get("origin", "hand-written, docs/"), item["faithful"])
        if taken.get(key, 0) < n:
            taken[key] = taken.get(key, 0) + 1
            chosen.append(item)
    return chosen


# A sentence that opens by pointing back ("Its default is 100.", "This command deletes them.")
# states nothing a judge can check on its own: the judge would have to guess what "it" is.
_POINTS_BACK = re.compile(
    r"^(?:it|its|this|that|these|those|they|their|them|such|the\s+default)\b", re.IGNORECASE
)


def claims_in_context(claims: list[str]) -> list[str]:
    """What the judge is asked for each of `claims`: a sentence that points back, after the one
    before it ("The setting is RAG_HNSW_EF_SEARCH. Its default is 100."); others as they are."""
    return [
        f"{claims[n - 1]} {claim}" if n and _POINTS_BACK.match(claim) else claim
        for n, claim in enumerate(claims)
    ]


def cited_claims(answer: str) -> list[tuple[str, list[int]]]:
    """`answer_claims`, each with the numbers its sentence cites.

    A citation after a sentence's full stop ("... file. [2] Then ...") is split off with the next
    sentence; it goes back to its own.
    """
    from ragapp.graph.grounding import MAX_CLAIMS, answer_pieces, piece_claim

    found: list[list] = []
    for piece in answer_pieces(answer):
        leading = _LEADING_CITES.match(piece)
        if leading and found:
            found[-1][1].update(int(n) for n in _CITE.findall(leading.group(1)))
            piece = piece[leading.end() :]
        found.append([piece_claim(piece), {int(n) for n in _CITE.findall(piece)}])
    return [(claim, sorted(cites)) for claim, cites in found if claim][:MAX_CLAIMS]


def record(out: Path, signals: list[str], sample: int = 0) -> None:
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from ragapp.graph import prompts
    from ragapp.graph.context import Usage
    from ragapp.graph.excerpts import _cosine, units
    from ragapp.graph.grounding import answer_claims
    from ragapp.graph.judges import lexical_verdict, yes_probability
    from ragapp.graph.state import RetrievedDoc
    from ragapp.providers import get_embeddings
    from ragapp.providers.local_llm import local_reader_chat_model

    model = local_reader_chat_model("qwen2.5-coder-1.5b")  # the judges' server, as in the product
    embeddings = get_embeddings() if {"focus", "nearest"} & set(signals) else None
    items = [json.loads(line) for line in SET.read_text().splitlines() if line.strip()]
    items = [i for i in items if i["kind"] == "faithfulness" and i.get("faithful") is not None]
    if sample:
        items = per_origin(items, sample)
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
            if embeddings is not None:
                pieces = [piece for text in item["documents"] for piece in units(text)]
                vectors = embeddings.embed_documents(pieces)
            cited_sentences = cited_claims(item["answer"])
            # The product's claims, no others: the citations are only read beside them.
            assert [claim for claim, _ in cited_sentences] == answer_claims(item["answer"])
            asked = claims_in_context([claim for claim, _ in cited_sentences])
            for (claim, cites), in_context in zip(cited_sentences, asked, strict=True):
                signal = {"claim": claim}
                if "context" in signals:
                    signal["p_context"] = (
                        yes_probability(
                            model,
                            prompts.claim_support_messages(
                                item["question"], docs, in_context, usable
                            ),
                            usage=Usage(),
                        )
                        if in_context != claim
                        else None  # stands alone: asked as it is (p_docs)
                    )
                if "docs" in signals:
                    signal["p_docs"] = yes_probability(
                        model,
                        prompts.claim_support_messages(item["question"], docs, claim, usable),
                        usage=Usage(),
                    )
                if "point" in signals:
                    signal["p_point"] = point_probability(
                        model,
                        point_messages(item["question"], docs, claim),
                        len(docs),
                        usage=Usage(),
                    )
                if "nearest" in signals:
                    claim_vector = embeddings.embed_query(claim)
                    signal["p_nearest"] = max(
                        (_cosine(claim_vector, vector) for vector in vectors), default=0.0
                    )
                if "flip" in signals:
                    signal["p_flip"] = 1 - yes_probability(
                        model, flip_messages(item["question"], docs, claim), usage=Usage()
                    )
                if "prior" in signals:
                    signal["p_prior"] = yes_probability(
                        model, prior_messages(item["question"], claim), usage=Usage()
                    )
                if "focus" in signals:
                    passage = focus_passage(claim, pieces, vectors, embeddings.embed_query(claim))
                    signal["p_focus"] = yes_probability(
                        model, focus_messages(passage, claim), usage=Usage()
                    )
                if "cited" in signals:
                    cited = [n for n in cites if n in usable]
                    signal["p_cited"] = (
                        yes_probability(
                            model,
                            prompts.claim_support_messages(item["question"], docs, claim, cited),
                            usage=Usage(),
                        )
                        if cited and cited != usable
                        else None  # cites nothing, or every document: the same as p_docs
                    )
                claims.append(signal)
            row = {
                "id": item["id"],
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
                + " ".join(
                    "/".join(
                        f"{v:.2f}" for k, v in c.items() if k.startswith("p_") and v is not None
                    )
                    for c in claims
                ),
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
    # A short focused passage per claim, in a prompt of its own.
    "min p_focus": lambda cs: min(c["p_focus"] for c in cs),
    "mean p_focus": lambda cs: sum(c["p_focus"] for c in cs) / len(cs),
    "min of p_docs and p_focus": lambda cs: min(min(c["p_docs"], c["p_focus"]) for c in cs),
    "min of the two's mean": lambda cs: min((c["p_docs"] + c["p_focus"]) / 2 for c in cs),
    # What the sentence cites, where it cites some documents and not all.
    "min p_cited (else p_docs)": lambda cs: min(
        c["p_docs"] if c["p_cited"] is None else c["p_cited"] for c in cs
    ),
    # A sentence that points back ("Its default is 100."), asked after the one before it.
    "min p_context (else p_docs)": lambda cs: min(
        c["p_docs"] if c["p_context"] is None else c["p_context"] for c in cs
    ),
    # Which document states the claim, 0 for none: the weakest claim's 1 - P(0).
    "min p_point": lambda cs: min(c["p_point"] for c in cs),
    "min of the mean of p_docs and p_point": lambda cs: min(
        (c["p_docs"] + c["p_point"]) / 2 for c in cs
    ),
    # The nearest piece of the documents, by embedding, alone and beside the model's verdict.
    "min p_nearest": lambda cs: min(c["p_nearest"] for c in cs),
    "min of the mean of p_docs and p_nearest": lambda cs: min(
        (c["p_docs"] + c["p_nearest"]) / 2 for c in cs
    ),
    # The question turned over: a lean to "yes" cancels in the mean of the two.
    "min p_flip": lambda cs: min(c["p_flip"] for c in cs),
    "min of the mean of p_docs and p_flip": lambda cs: min(
        (c["p_docs"] + c["p_flip"]) / 2 for c in cs
    ),
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
        try:
            [rule(r["claims"]) for r in rows if r["claims"]]
        except KeyError:
            continue  # a signal this file did not record
        except TypeError:
            print(f"{name:<33} some claims have no value (no digit among the likeliest tokens)")
            continue

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
            f"{hc:.3f} / {hp:.3f} ({hb} + {hg}) | AUC tuning {auc(tuning, rule):.3f}"
        )


def auc(rows: list[dict], rule) -> float:
    """How often a faithful answer scores above an unfaithful one (a veto scores lowest)."""

    def score(row):
        if row["veto"]:
            return float("-inf")
        return rule(row["claims"]) if row["claims"] else float("inf")

    good = [score(r) for r in rows if r["faithful"]]
    bad = [score(r) for r in rows if not r["faithful"]]
    if not good or not bad:
        return float("nan")
    wins = sum((g > b) + 0.5 * (g == b) for g in good for b in bad)
    return wins / (len(good) * len(bad))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--analyse", type=Path)
    parser.add_argument(
        "--signals",
        nargs="+",
        choices=("docs", "prior", "focus", "cited", "context", "point", "flip", "nearest"),
        default=["docs", "prior"],
        help="what to record for each claim (default: docs prior)",
    )
    parser.add_argument(
        "--per-origin",
        type=int,
        default=0,
        help="record only the first N answers of each label of each origin (a balanced sample)",
    )
    args = parser.parse_args()
    if args.out:
        record(args.out, args.signals, args.per_origin)
    if args.analyse:
        analyse(args.analyse)


if __name__ == "__main__":
    main()
