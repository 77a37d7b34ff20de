"""The graph's cost: orchestration overhead with instant models, then the local provider for real.

1. Orchestration overhead: a full run (graph, trace-event rows, run-row updates) with the fake
   chat model, which answers instantly, against a bare retrieval call measured in the same run;
   overhead = run time - bare retrieval time (target <= 50 ms per run).
2. Instrumentation cost: the same graph run with the fake model, with metrics and traces on
   (node wrappers, model-call callbacks, the run's span and counters, an SDK tracer with a
   batching exporter) against off, interleaved in one process; target <= 5 ms per run at p50.
3. End-to-end latency of the `local` provider (packaged Qwen2.5 models on the CPU) over the
   bundled docs/: p50/p95 per run and output tokens per second.

    uv run python bench/graph.py             # both parts (the local part takes minutes)
    uv run python bench/graph.py --runs 50 --local-questions 0   # overhead only
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _django import throwaway_django

QUESTIONS = [
    "How does incremental ingestion decide that a file is unchanged?",
    "What happens when the embedding model changes?",
    "Which file formats can ingest_docs read?",
    "Where does the embedded PostgreSQL keep its data?",
    "How do I use my own PostgreSQL server instead of the embedded one?",
    "What is the default chunk size and overlap?",
    "How do I remove documents whose files were deleted?",
    "What does the HNSW index cover?",
    "How can I see what ingest_docs would change without changing anything?",
    "What is the maximum size of a file that ingest_docs accepts?",
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def overhead(runs: int) -> dict:
    from ragapp.graph.context import ChatModels
    from ragapp.providers import get_embeddings
    from ragapp.providers.fake_chat import FakeChatModel, FakeScript
    from ragapp.retrieval.retrievers import VectorRetriever
    from ragapp.runs.runner import execute_run
    from ragapp.services import run_create

    embeddings = get_embeddings()
    retriever = VectorRetriever(embeddings)
    model = FakeChatModel(script=FakeScript(relevance=lambda q, d: 0.9))
    models = ChatModels(generator=model, grader=model, broadener=model, names={"all": "fake"})
    bare, full = [], []
    for i in range(runs + 3):  # the first three warm caches and connections
        question = QUESTIONS[i % len(QUESTIONS)]
        started = time.perf_counter()
        retriever.search(question, k=5)
        bare_ms = (time.perf_counter() - started) * 1000
        run = run_create(query=question)
        started = time.perf_counter()
        execute_run(run, models=models, retriever=retriever)
        full_ms = (time.perf_counter() - started) * 1000
        assert run.status == "answered", run.error
        if i >= 3:
            bare.append(bare_ms)
            full.append(full_ms)
    return {
        "runs": runs,
        "bare_retrieval_ms_p50": round(statistics.median(bare), 2),
        "full_run_ms_p50": round(statistics.median(full), 2),
        "overhead_ms_p50": round(statistics.median(full) - statistics.median(bare), 2),
        "overhead_ms_p95": round(percentile(full, 0.95) - statistics.median(bare), 2),
    }


def instrumentation(runs: int) -> dict:
    """Per-run cost of metrics + traces: the graph with them against without, interleaved.

    The database is left out on purpose (an in-memory retriever and emitter): instrumentation
    touches neither, and their noise would swamp a cost of a few hundred microseconds.
    """
    from types import SimpleNamespace

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from ragapp.graph.builder import build_graph
    from ragapp.graph.context import ChatModels, GraphContext
    from ragapp.graph.state import RetrievedDoc
    from ragapp.observability import tracing
    from ragapp.observability.instrument import observed_run
    from ragapp.providers.fake_chat import FakeChatModel, FakeScript

    class Discard(SpanExporter):  # exporting happens on the processor's own thread anyway
        def export(self, spans):
            return SpanExportResult.SUCCESS

    docs = [
        RetrievedDoc(i, i, f"Doc {i}", f"docs/{i}.md", f"Doc {i}", f"Backups run at 0{i}:00.", 0.8)
        for i in range(1, 6)
    ]
    retriever = SimpleNamespace(mode="vector", search=lambda query, *, k, depth=None: docs[:k])
    emitter = SimpleNamespace(emit=lambda *args, **kwargs: None)
    model = FakeChatModel(script=FakeScript(relevance=lambda q, d: 0.9))
    models = ChatModels(generator=model, grader=model, broadener=model, names={"all": "fake"})
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Discard()))

    def once(observed: bool) -> float:
        context = GraphContext(models=models, retriever=retriever, emitter=emitter)
        state = {"query": "When do backups run?", "original_query": "When do backups run?"}
        state |= {"iteration_count": 0, "correction_count": 0}
        started = time.perf_counter()
        if observed:
            run = SimpleNamespace(pk="bench", owner_id=1, status="answered", error="")
            run.response_metadata = {"cost_usd": 0.0}
            with observed_run(run, provider="fake") as callbacks:
                build_graph().invoke(state, context=context, config={"callbacks": callbacks})
        else:
            build_graph(observed=False).invoke(state, context=context)
        return (time.perf_counter() - started) * 1000

    tracing.use_provider(provider)
    try:
        off, on = [], []
        for i in range(runs + 10):  # the first ten warm both paths
            # Alternate which goes first, so neither always runs on a warmer cache.
            if i % 2:
                off_ms, on_ms = once(False), once(True)
            else:
                on_ms, off_ms = once(True), once(False)
            if i >= 10:
                off.append(off_ms)
                on.append(on_ms)
    finally:
        tracing.use_provider(None)
        provider.shutdown()
    off_p50, on_p50 = statistics.median(off), statistics.median(on)
    return {
        "runs": runs,
        "off_ms_p50": round(off_p50, 3),
        "on_ms_p50": round(on_p50, 3),
        "cost_ms_p50": round(on_p50 - off_p50, 3),
        "ratio_p50": round(on_p50 / off_p50, 3),
        "cost_ms_p95": round(percentile(on, 0.95) - percentile(off, 0.95), 3),
    }


def local_latency(count: int, model: str) -> dict:
    from django.conf import settings

    from ragapp.models import QueryRun
    from ragapp.providers.chat import clear_chat_models_cache
    from ragapp.runs.runner import execute_run
    from ragapp.services import run_create

    settings.RAG_CHAT_PROVIDER = "local"
    settings.RAG_RELEVANCE_JUDGE = "logprobs"
    settings.RAG_FAITHFULNESS_JUDGE = "structured"
    settings.RAG_RELEVANCE_THRESHOLD = 0.6
    settings.RAG_ANSWER_CONFIDENCE_THRESHOLD = 0.8
    for name in ("RAG_GENERATION_MODEL", "RAG_GRADER_MODEL", "RAG_BROADEN_MODEL"):
        setattr(settings, name, model)
    clear_chat_models_cache()
    seconds, rates, statuses = [], [], []
    for question in QUESTIONS[:count]:
        run = run_create(query=question)
        started = time.perf_counter()
        execute_run(run)
        seconds.append(time.perf_counter() - started)
        run.refresh_from_db()
        statuses.append(run.status)
        meta = run.response_metadata
        out_tokens = sum(t["output"] for t in meta.get("tokens", {}).values())
        node_ms = meta.get("node_ms", {})
        generate_s = node_ms.get("generate", 0) + node_ms.get("refine_answer", 0)
        if generate_s:
            gen_tokens = out_tokens - sum(  # one token per yes/no verdict
                1 for e in run.events.filter(kind__in=["grade", "grade_answer"])
            )
            rates.append(gen_tokens / (generate_s / 1000))
        print(f"  {seconds[-1]:6.1f} s  {run.status:<9} {question}")
    return {
        "questions": count,
        "p50_s": round(statistics.median(seconds), 1),
        "p95_s": round(percentile(seconds, 0.95), 1),
        "generation_tokens_per_s": round(statistics.median(rates), 1) if rates else None,
        "answered": statuses.count(QueryRun.Status.ANSWERED),
        "refused": statuses.count(QueryRun.Status.REFUSED),
        "failed": statuses.count(QueryRun.Status.FAILED),
    }


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="fake-model runs for the overhead")
    parser.add_argument(
        "--instrumentation-runs", type=int, default=200, help="graph runs each way; 0 skips"
    )
    parser.add_argument("--local-questions", type=int, default=10, help="0 skips the local part")
    parser.add_argument("--local-model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/all.py)")
    args = parser.parse_args()
    result = {}
    with throwaway_django(RAG_EMBEDDING_PROVIDER="local", RAG_CHAT_PROVIDER="fake") as _:
        from django.conf import settings
        from django.core.management import call_command

        call_command("ingest_docs", str(settings.BASE_DIR / "docs"), stdout=io.StringIO())
        result["overhead"] = overhead(args.runs)
        o = result["overhead"]
        print(f"bare retrieval (embed query + HNSW): {o['bare_retrieval_ms_p50']:8.2f} ms p50")
        print(f"full run with instant fake models:   {o['full_run_ms_p50']:8.2f} ms p50")
        print(
            f"orchestration overhead per run:      {o['overhead_ms_p50']:8.2f} ms p50, "
            f"{o['overhead_ms_p95']:.2f} ms p95   (target <= 50 ms)"
        )
        if args.instrumentation_runs:
            result["instrumentation"] = ins = instrumentation(args.instrumentation_runs)
            print(
                f"instrumentation (metrics + traces):  {ins['cost_ms_p50']:8.3f} ms p50 per run "
                f"({ins['off_ms_p50']:.2f} ms off, {ins['on_ms_p50']:.2f} ms on, ratio "
                f"{ins['ratio_p50']:.3f}; p95 {ins['cost_ms_p95']:.3f} ms)   (target <= 5 ms)"
            )
        if args.local_questions:
            print(f"local provider, {args.local_questions} questions over docs/:")
            result["local"] = local_latency(args.local_questions, args.local_model)
            loc = result["local"]
            print(
                f"end-to-end: p50 {loc['p50_s']} s, p95 {loc['p95_s']} s; generation "
                f"{loc['generation_tokens_per_s']} tokens/s; answered {loc['answered']}, "
                f"refused {loc['refused']}, failed {loc['failed']}"
            )
    if args.json:
        args.json.write_text(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
