"""A run's time with the local model: the graph as it is against the pipelines before it.

Three pipelines answer the same questions of tests/eval/golden_docs.jsonl in one process, on one
llama.cpp server, one question at a time, rotating which goes first:

- before (the baseline, rebuilt here from the prompts of 2026-11-30): retrieval; one yes/no
  relevance prompt per chunk, each reading its chunk alone; the answer written from a new
  prompt of the chunks that passed (0.45, with today's generation instructions), so the
  documents are read twice; the lexical check.
  It leaves out the refinement the old graph did for a third of its answers, so it flatters the
  baseline.
- per-document: the product's graph with each chunk passing on its own verdict
  (`RAG_RELEVANCE_GATE=document`), so the judge is asked about every chunk: the default until
  the night of 2026-12-01. (The graph with whole chunks and no answer cap, the morning's, was
  measured against the excerpts in the evening's run: docs/evaluation.md.)
- now: the product's graph (`execute_run`) with the settings in force: relevance verdicts as
  tails over one shared documents prefix, every chunk but the first shown as an excerpt, the
  answer from the same cache and capped, the claims check, a refinement when it fails.

It prints p50/p95 per pipeline, the ratios now/before and now/per-document, and where the time of a
run goes now (each node's share of the summed run time).

    uv run python bench/pipeline.py                  # 12 questions, about 12 minutes on 2 cores
    uv run python bench/pipeline.py --questions 6    # about 6 minutes
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

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "eval" / "golden_docs.jsonl"
OLD_THRESHOLD = 0.45


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def questions(count: int) -> list[str]:
    items = [json.loads(line) for line in GOLDEN.read_text().splitlines() if line.strip()]
    answerable = [item["question"] for item in items if item["answerable"]]
    step = len(answerable) / count
    return [answerable[int(i * step)] for i in range(count)]


def before(question: str, retriever, model, usage) -> float:
    """The pipeline of 2026-11-30, without its refinements; seconds."""
    from langchain_core.messages import HumanMessage, SystemMessage

    from ragapp.graph import prompts
    from ragapp.graph.judges import lexical_verdict, text_call, yes_probability

    started = time.perf_counter()
    docs = retriever.search(question, k=5)
    passed = []
    for doc in docs:
        if doc.similarity < 0.25:  # the embedding pre-filter, as then
            continue
        body = (
            f"Question: {question}\n\n{prompts._document(None, doc)}\n\n"
            "Does the document above contain information that helps answer the question? "
            "Answer with one word: yes or no."
        )
        messages = [SystemMessage(prompts.SYSTEM), HumanMessage(body)]
        if yes_probability(model, messages, usage=usage) >= OLD_THRESHOLD:
            passed.append(doc)
    if passed:
        answer = text_call(model, prompts.generate_messages(question, passed), usage=usage)
        lexical_verdict(question, answer, passed)
    return time.perf_counter() - started


def docs_and_local_model():
    """Ingest this repository's docs into the throwaway knowledge base; the local chat model,
    its server started without llama.cpp's host-memory prompt cache."""
    from django.conf import settings
    from django.core.management import call_command

    from ragapp.providers.chat import get_chat_models

    call_command("ingest_docs", str(settings.BASE_DIR / "docs"), stdout=io.StringIO())
    start_without_prompt_memory()
    return get_chat_models().generator


def start_without_prompt_memory() -> None:
    """Start the local model's servers without llama.cpp's host-memory prompt cache.

    That cache (`cache_ram_mib`, 8 GiB by default) keeps earlier prompts and restores the longest
    match, so an arm asking a question the arm before it asked would find its documents already
    read; `forget_prompt` alone cannot stop that. The product keeps the cache: within a run the
    slot's own cache serves the shared documents prefix either way. With `RAG_LOCAL_READER` the
    judges' server is started the same way, its weights unrepacked as the product starts it.
    """
    from django.conf import settings

    from ragapp.providers import local_llm

    def without_memory(params) -> None:
        params.cache_ram_mib = 0

    def reader_without_memory(params) -> None:
        params.no_extra_bufts = True
        params.cache_ram_mib = 0

    name = settings.RAG_GENERATION_MODEL
    with local_llm._servers_lock:
        local_llm._servers[name] = local_llm._start(name, without_memory)
        local_llm._readers[name] = local_llm._start(name, reader_without_memory)


def forget_prompt(model, usage) -> None:
    """Make every server's one slot hold an unrelated prompt, so no arm reads the documents the
    arm before it left in the prompt cache (two arms of the graph share their first chunk).

    That holds only with the host-memory prompt cache off (`start_without_prompt_memory`).
    `model` is any client of the model; both its servers (writer and reader) forget.
    """
    from langchain_core.messages import HumanMessage

    from ragapp.graph.judges import text_call
    from ragapp.providers import local_llm

    for servers in (local_llm._servers, local_llm._readers):
        server = servers.get(model.model_name)
        client = local_llm._client(local_llm.ChatOpenAI, server) if server else model
        text_call(client, [HumanMessage("Reply with OK.")], usage=usage, max_tokens=1)


def now(question: str, **overrides) -> tuple[float, dict]:
    """The product's graph with the settings in force, or with `overrides` of them; seconds and
    its node timings."""
    from django.test import override_settings

    from ragapp.runs.runner import execute_run
    from ragapp.services import run_create

    run = run_create(query=question)
    started = time.perf_counter()
    with override_settings(**overrides):
        execute_run(run)
    seconds = time.perf_counter() - started
    run.refresh_from_db()
    return seconds, run.response_metadata.get("node_ms", {})


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    # Here, not at the top: _django puts the project's root on the path when it is imported.
    from ragapp.evaluation.machine import describe_machine, machine_line

    ran_on = describe_machine()
    print(machine_line(ran_on), flush=True)
    with throwaway_django(RAG_EMBEDDING_PROVIDER="local", RAG_CHAT_PROVIDER="local"):
        from django.conf import settings

        from ragapp.graph.context import Usage
        from ragapp.providers import get_embeddings
        from ragapp.retrieval.retrievers import build_retriever

        model = docs_and_local_model()
        retriever = build_retriever(mode=settings.RAG_RETRIEVAL_MODE, embeddings=get_embeddings())
        old, per_document, new, nodes = [], [], [], {}
        arms = ["before", "per-document", "now"]
        for i, question in enumerate(questions(args.questions)):
            for which in arms[i % 3 :] + arms[: i % 3]:
                forget_prompt(model, Usage())
                if which == "before":
                    old.append(before(question, retriever, model, Usage()))
                elif which == "per-document":
                    per_document.append(now(question, RAG_RELEVANCE_GATE="document")[0])
                else:
                    seconds, node_ms = now(question)
                    new.append(seconds)
                    for node, ms in node_ms.items():
                        nodes[node] = nodes.get(node, 0.0) + ms / 1000
            print(
                f"  before {old[-1]:5.1f} s   per-document {per_document[-1]:5.1f} s   "
                f"now {new[-1]:5.1f} s   "
                f"{question}",
                flush=True,
            )
    total = sum(new)
    result = {
        "machine": ran_on,
        "questions": len(new),
        "before_p50_s": round(statistics.median(old), 1),
        "before_p95_s": round(percentile(old, 0.95), 1),
        "per_document_p50_s": round(statistics.median(per_document), 1),
        "per_document_p95_s": round(percentile(per_document, 0.95), 1),
        "now_p50_s": round(statistics.median(new), 1),
        "now_p95_s": round(percentile(new, 0.95), 1),
        "ratio_p50": round(statistics.median(new) / statistics.median(old), 3),
        "ratio_per_document_p50": round(
            statistics.median(new) / statistics.median(per_document), 3
        ),
        "node_share": {node: round(s / total, 3) for node, s in sorted(nodes.items())},
    }
    print(
        f"before: p50 {result['before_p50_s']} s, p95 {result['before_p95_s']} s; per-document: "
        f"p50 {result['per_document_p50_s']} s, p95 {result['per_document_p95_s']} s; now: p50 "
        f"{result['now_p50_s']} s, p95 {result['now_p95_s']} s; ratio now/before (p50) "
        f"{result['ratio_p50']}, now/per-document {result['ratio_per_document_p50']}"
    )
    print(
        "share of the run time now: "
        + ", ".join(f"{k} {v:.0%}" for k, v in result["node_share"].items())
    )
    if args.json:
        args.json.write_text(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
