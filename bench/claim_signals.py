"""Per-claim signals of the answer check on the labelled answers, for choosing a decision rule.

For every faithfulness item of bench/judge_set.jsonl it records, with the packaged 1.5B model:

- the lexical veto (does a named specific of the answer appear in no document?);
- for each claim of the answer (`answer_claims`), the product's P(yes) that the documents state
  it (`claim_support_messages`, over the shared documents prefix), and the model's P(yes) that the
  claim is correct with no documents at all (its prior belief).

Three more signals on request (`--signals`):

- `focus`: P(yes) that a short passage states the claim, the passage being the few pieces of the
  documents (sentences, list items, code blocks; `excerpts.units`) that name the claim's
  specifics or are closest to it by embedding, at most `FOCUS_BUDGET` characters, asked in a
  prompt of its own (a small model judges a short premise better than five documents);
- `cited`: P(yes) that the documents the sentence cites (`[n]`) state it, over the shared
  prefix, for a sentence that cites some but not all of them (Self-RAG's IsSup proper);
- `context`: P(yes) for a sentence that opens by pointing back ("Its default is 100."), asked
  after the sentence before it (`claims_in_context`); recorded with `docs`, which its rule falls
  back on for the other sentences.

A claim the model believes whatever the documents say has a high prior; one the documents
support gains from reading them. The difference is the "context-aware" signal of contrastive
decoding work. The records go to a JSON-lines file; `--analyse` reads one back and prints, per
decision rule and threshold, the share of unfaithful answers caught and faithful ones passed,
for the tuning origins and the held-out ones apart, choosing each rule's threshold on the
tuning origins only.

    uv run python bench/claim_signals.py --out bench/out/claim_signals.jsonl   # ~30 minutes
    uv run python bench/claim_signals.py --signals docs focus cited --out bench/out/focus.jsonl
    uv run python bench/claim_signals.py --signals docs context --out bench/out/context.jsonl
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


def record(out: Path, signals: list[str]) -> None:
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from ragapp.graph import prompts
    from ragapp.graph.context import Usage
    from ragapp.graph.excerpts import units
    from ragapp.graph.grounding import answer_claims
    from ragapp.graph.judges import lexical_verdict, yes_probability
    from ragapp.graph.state import RetrievedDoc
    from ragapp.providers import get_embeddings
    from ragapp.providers.local_llm import local_reader_chat_model

    model = local_reader_chat_model("qwen2.5-coder-1.5b")  # the judges' server, as in the product
    embeddings = get_embeddings() if "focus" in signals else None
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
    parser.add_argument(
        "--signals",
        nargs="+",
        choices=("docs", "prior", "focus", "cited", "context"),
        default=["docs", "prior"],
        help="what to record for each claim (default: docs prior)",
    )
    args = parser.parse_args()
    if args.out:
        record(args.out, args.signals)
    if args.analyse:
        analyse(args.analyse)


if __name__ == "__main__":
    main()
