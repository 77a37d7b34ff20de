"""Aggregate per-question results into a report; compare two reports."""

from __future__ import annotations

from collections import defaultdict

from ragapp.evaluation.harness import QuestionResult
from ragapp.evaluation.metrics import mean, percentile, refusal_scores


def _spread(values: list[float]) -> dict:
    values = [v for v in values if v is not None]
    return {
        "n": len(values),
        "mean": mean(values),
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "min": min(values) if values else None,
        "max": max(values) if values else None,
    }


def aggregate(results: list[QuestionResult], *, k: int, full: bool, meta: dict) -> dict:
    """The report: every metric of the evaluation, plus each question's own row."""
    answerable = [r for r in results if r.answerable]
    report = {
        **meta,
        "mode": "full" if full else "retrieval",
        "k": k,
        "questions": len(results),
        "answerable": len(answerable),
        "unanswerable": len(results) - len(answerable),
        "retrieval": {
            f"recall_at_{k}": mean([r.recall_at_k for r in answerable]),
            "mrr_at_10": mean([r.reciprocal_rank for r in answerable]),
            "latency_ms": _spread([r.retrieval_ms for r in results]),
            "misses": [r.id for r in answerable if not r.recall_at_k],
        },
        "items": [r.as_dict() for r in results],
    }
    if full:
        report.update(_answer_metrics(results, answerable))
    return report


def _answer_metrics(results: list[QuestionResult], answerable: list[QuestionResult]) -> dict:
    finished = [r for r in results if r.status in ("answered", "refused")]
    graded = sum(r.expected_graded for r in results)
    passed = sum(r.expected_passed for r in results)
    node_ms: dict[str, list[float]] = defaultdict(list)
    for r in results:
        for node, ms in r.node_ms.items():
            node_ms[node].append(ms)
    tokens = {"input": 0, "output": 0, "calls": 0}
    for r in results:
        for usage in r.tokens.values():
            for key in tokens:
                tokens[key] += usage.get(key, 0)
    costs = [r.cost_usd for r in results if r.cost_usd is not None]
    answered = [r for r in answerable if r.status == "answered"]
    return {
        "grading": {
            "expected_chunks_graded": graded,
            "expected_chunks_passed": passed,
            "survival_rate": passed / graded if graded else None,
            "prefiltered_chunks": sum(r.prefiltered for r in results),
            "relevance_expected": [s for r in results for s in r.relevance_expected],
            "relevance_other": [s for r in results for s in r.relevance_other],
        },
        "answers": {
            "fact_accuracy": mean([1.0 if r.facts_ok else 0.0 for r in answerable]),
            "fact_accuracy_when_answered": mean([1.0 if r.facts_ok else 0.0 for r in answered]),
            "answered": sum(1 for r in results if r.status == "answered"),
            "refused": sum(1 for r in results if r.status == "refused"),
            "failed": sum(1 for r in results if r.status == "failed"),
        },
        # Failed runs neither answered nor refused; they are left out here and counted in
        # rates.failed.
        "refusal": {
            **refusal_scores((r.answerable, r.refused) for r in finished),
            "failed_left_out": len(results) - len(finished),
        },
        "faithfulness": {
            **_spread([r.faithfulness_score for r in results]),
            "scores": [r.faithfulness_score for r in results if r.faithfulness_score is not None],
        },
        "rates": {
            "broaden": mean([1.0 if r.broadened else 0.0 for r in results]),
            "refine": mean([1.0 if r.refined else 0.0 for r in results]),
            "failed": mean([1.0 if r.status == "failed" else 0.0 for r in results]),
        },
        "latency": {
            "run_ms": _spread([r.total_ms for r in results]),
            "node_ms": {node: _spread(values) for node, values in sorted(node_ms.items())},
        },
        "tokens": {
            **tokens,
            "per_run": tokens["input"] / len(results) + tokens["output"] / len(results),
        },
        "cost_usd": sum(costs) if costs else None,
    }


# (label, path in the report, True when higher is better)
HEADLINE = [
    ("recall@k", ("retrieval", "recall_at_k"), True),
    ("MRR@10", ("retrieval", "mrr_at_10"), True),
    ("retrieval p50 ms", ("retrieval", "latency_ms", "p50"), False),
    ("expected chunks kept", ("grading", "survival_rate"), True),
    ("fact accuracy", ("answers", "fact_accuracy"), True),
    ("refusal precision", ("refusal", "precision"), True),
    ("refusal recall", ("refusal", "recall"), True),
    ("false refusals", ("refusal", "false_refusal_rate"), False),
    ("faithfulness p50", ("faithfulness", "p50"), True),
    ("broaden rate", ("rates", "broaden"), None),
    ("refine rate", ("rates", "refine"), None),
    ("failed", ("rates", "failed"), False),
    ("run p50 s", ("latency", "run_ms", "p50"), False),
    ("run p95 s", ("latency", "run_ms", "p95"), False),
    ("tokens per run", ("tokens", "per_run"), False),
    ("cost USD", ("cost_usd",), False),
]


def metric(report: dict, path: tuple[str, ...]):
    """The value at `path` (recall_at_k resolves to the report's own k), or None."""
    value = report
    for key in path:
        if key == "recall_at_k":
            key = f"recall_at_{report.get('k', 5)}"
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    if path[-1] in ("p50", "p95") and path[0] == "latency" and value is not None:
        return value / 1000  # run latencies are shown in seconds
    return value


def headline(report: dict) -> list[tuple[str, object]]:
    """The report's main figures, in display order, leaving out those it has not measured."""
    rows = []
    for label, path, _ in HEADLINE:
        value = metric(report, path)
        if value is not None:
            rows.append((label.replace("@k", f"@{report.get('k', 5)}"), value))
    return rows


def compare(current: dict, baseline: dict) -> list[dict]:
    """Each headline metric in both reports: old, new, delta, and whether it got better."""
    rows = []
    for label, path, higher_is_better in HEADLINE:
        new, old = metric(current, path), metric(baseline, path)
        if new is None and old is None:
            continue
        delta = new - old if isinstance(new, int | float) and isinstance(old, int | float) else None
        better = None
        if delta and higher_is_better is not None:
            better = (delta > 0) == higher_is_better
        rows.append({"metric": label, "old": old, "new": new, "delta": delta, "better": better})
    return rows


def fmt(value) -> str:
    """A metric for a terminal table."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)
