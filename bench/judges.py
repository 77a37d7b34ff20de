"""Judge accuracy of the packaged local models on a labelled set.

For each model and judge method it runs every item of bench/judge_set.jsonl through the same
functions the graph uses, with the product's own decision rules (relevance: score >=
RAG_RELEVANCE_THRESHOLD; faithful: score >= the answer threshold of that method, and risk != high
where the veto applies), and reports accuracy and seconds per verdict. For the answer check it
reports the two figures that matter: the share of unfaithful answers it catches and the share of
faithful answers it passes, overall and per origin of the answers (hand-written over docs/, or
drafts the local model wrote on a third-party set). For logprobs it also reports the threshold
that would have been best.

Methods: structured, logprobs (both judges), lexical and claims (the answer check only; lexical
makes no model call).

    uv run python bench/judges.py                                   # 1.5B, every method
    uv run python bench/judges.py --methods lexical claims --kinds faithfulness
    uv run python bench/judges.py --models qwen2.5-coder-0.5b --methods logprobs
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SET = Path(__file__).resolve().parent / "judge_set.jsonl"


def load_set() -> list[dict]:
    items = [json.loads(line) for line in SET.read_text().splitlines() if line.strip()]
    # A drafted answer nobody has labelled yet (bench/export_drafts.py) is not scored.
    return [item for item in items if item.get("relevant", item.get("faithful")) is not None]


def balanced(items: list[dict], per_kind: int) -> list[dict]:
    """The first per_kind/2 items of each kind and label, in set order."""
    chosen = []
    for kind, label in (("relevance", "relevant"), ("faithfulness", "faithful")):
        for value in (True, False):
            matching = [i for i in items if i["kind"] == kind and i[label] is value]
            chosen += matching[: per_kind // 2]
    return chosen


def doc(text: str, n: int = 0):
    from ragapp.graph.state import RetrievedDoc

    return RetrievedDoc(n, n, "Docs", "docs/set.md", "", text, 1.0)


def scores(predicted: list[bool], truth: list[bool]) -> dict:
    tp = sum(p and t for p, t in zip(predicted, truth, strict=True))
    fp = sum(p and not t for p, t in zip(predicted, truth, strict=True))
    fn = sum(t and not p for p, t in zip(predicted, truth, strict=True))
    correct = sum(p == t for p, t in zip(predicted, truth, strict=True))
    return {
        "accuracy": round(correct / len(truth), 3),
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
    }


def best_threshold(values: list[float], truth: list[bool]) -> tuple[float, float]:
    best = (0.5, 0.0)
    for step in range(5, 100, 5):
        threshold = step / 100
        accuracy = sum((v >= threshold) == t for v, t in zip(values, truth, strict=True))
        if accuracy / len(truth) > best[1]:
            best = (threshold, accuracy / len(truth))
    return best[0], round(best[1], 3)


ANSWER_THRESHOLDS = {
    "logprobs": 0.65,
    "lexical": 0.6,
    "claims": 0.35,
}  # the settings' defaults per method


def answer_threshold(method: str) -> float:
    """The answer threshold the product uses for `method` (RAG_ANSWER_CONFIDENCE_THRESHOLD)."""
    from django.conf import settings

    if method == settings.RAG_FAITHFULNESS_JUDGE:
        return settings.RAG_ANSWER_CONFIDENCE_THRESHOLD
    return ANSWER_THRESHOLDS.get(method, 0.80)


def check_figures(predicted: list[bool], truth: list[bool]) -> dict:
    """Share of unfaithful answers caught, and of faithful ones passed."""
    unfaithful = [p for p, t in zip(predicted, truth, strict=True) if not t]
    faithful = [p for p, t in zip(predicted, truth, strict=True) if t]
    return {
        "catches_unfaithful": round(sum(not p for p in unfaithful) / len(unfaithful), 3)
        if unfaithful
        else None,
        "passes_faithful": round(sum(faithful) / len(faithful), 3) if faithful else None,
        "unfaithful": len(unfaithful),
        "faithful": len(faithful),
    }


def evaluate(model_name: str, method: str, items: list[dict], kinds=("relevance", "faithfulness")):
    from django.conf import settings

    from ragapp.graph.context import ChatModels, Usage
    from ragapp.graph.judges import JudgeError, judge_faithfulness, judge_relevance
    from ragapp.providers.local_llm import local_reader_chat_model

    # The judges' client, as the product builds it: the reader's server (RAG_LOCAL_READER).
    model = local_reader_chat_model(model_name)
    models = ChatModels(
        generator=model,
        grader=model,
        broadener=model,
        relevance_method=method if method in ("structured", "logprobs") else "logprobs",
        faithfulness_method=method,
        bounded_schemas=True,
    )
    out = {}
    for kind in kinds:
        subset = [item for item in items if item["kind"] == kind]
        if kind == "relevance" and method in ("lexical", "claims"):
            continue  # answer-check methods only
        predicted, values, truth, errors = [], [], [], 0
        started = time.perf_counter()
        for item in subset:
            usage = Usage()
            try:
                if kind == "relevance":
                    verdict = judge_relevance(
                        models, item["question"], [doc(item["document"])], 1, usage=usage
                    )
                    value = verdict.score
                    passed = value >= settings.RAG_RELEVANCE_THRESHOLD
                else:
                    docs = [doc(text, i) for i, text in enumerate(item["documents"], 1)]
                    verdict = judge_faithfulness(
                        models,
                        item["question"],
                        item["answer"],
                        docs,
                        list(range(1, len(docs) + 1)),
                        usage=usage,
                        # The product's threshold: the claims check stops at an opening claim
                        # under it, so it must judge with the one the figures are read at.
                        threshold=answer_threshold(method),
                    )
                    value = verdict.faithfulness_score
                    passed = value >= answer_threshold(method) and (
                        method in ("lexical", "claims") or verdict.hallucination_risk != "high"
                    )
            except JudgeError:
                errors += 1
                value, passed = 0.0, False
            predicted.append(passed)
            values.append(value)
            truth.append(bool(item["relevant" if kind == "relevance" else "faithful"]))
        seconds = (time.perf_counter() - started) / len(subset)
        result = {
            "items": len(subset),
            **scores(predicted, truth),
            **(check_figures(predicted, truth) if kind == "faithfulness" else {}),
            "seconds_per_verdict": round(seconds, 2),
            "invalid_outputs": errors,
        }
        if method == "logprobs":
            result["best_threshold"], result["accuracy_at_best"] = best_threshold(values, truth)
            result["accuracy_at_0.5"] = round(
                sum((v >= 0.5) == t for v, t in zip(values, truth, strict=True)) / len(truth), 3
            )
        if kind == "faithfulness":
            origins = sorted({item.get("origin", "hand-written, docs/") for item in subset})
            result["by_origin"] = {
                origin: check_figures(
                    *zip(
                        *[
                            (p, t)
                            for p, t, item in zip(predicted, truth, subset, strict=True)
                            if item.get("origin", "hand-written, docs/") == origin
                        ],
                        strict=True,
                    )
                )
                for origin in origins
            }
        result["values"] = [round(v, 3) for v in values]
        result["truth"] = truth
        out[kind] = result
        shown = {k: v for k, v in result.items() if k not in ("values", "truth")}
        print(f"{model_name:<20} {method:<10} {kind:<12} {json.dumps(shown)}", flush=True)
    return out


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-1.5b"])
    parser.add_argument(
        "--methods", nargs="+", default=["logprobs", "structured", "lexical", "claims"]
    )
    parser.add_argument(
        "--per-kind", type=int, default=0, help="use N items of each kind, half of each label"
    )
    parser.add_argument("--kinds", nargs="+", default=["relevance", "faithfulness"])
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    items = load_set()
    if args.per_kind:
        items = balanced(items, args.per_kind)
    results = {}
    for model_name in args.models:
        for method in args.methods:
            results[f"{model_name}/{method}"] = evaluate(model_name, method, items, args.kinds)
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "judges.json").write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
