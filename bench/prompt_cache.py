"""Does llama.cpp's prompt cache reuse the documents between generate and grade_answer?

The answer-level prompts all begin with the same system message, the same numbered documents
and the question; only what follows differs. With one slot and `cache_prompt`, the local server
should then process only the new tail of the faithfulness prompt. This asks a few questions over
docs/ with the packaged model, sends the generate prompt and then the faithfulness prompt, and
reads llama.cpp's own timings of the second: tokens taken from the cache, tokens processed, and
time. The baseline, measured in the same run, is the same faithfulness prompt sent with the cache
switched off for that request (`cache_prompt: false`); the ratio is warm time over cold time.

    uv run python bench/prompt_cache.py                # 3 questions, the 1.5B model
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _django import throwaway_django

QUESTIONS = [
    "How do I re-embed the knowledge base after changing the embedding model?",
    "What does the grade event's passed field mean?",
    "How do I stream a run's trace with curl?",
]


def as_openai(messages) -> list[dict]:
    roles = {"system": "system", "human": "user", "ai": "assistant"}
    return [{"role": roles[m.type], "content": m.content} for m in messages]


def complete(client: httpx.Client, model: str, messages, max_tokens: int, cache=True) -> dict:
    started = time.perf_counter()
    response = client.post(
        "/chat/completions",
        json={
            "model": model,
            "messages": as_openai(messages),
            "max_tokens": max_tokens,
            "temperature": 0,
            "cache_prompt": cache,
        },
    )
    response.raise_for_status()
    body = response.json()
    timings = body.get("timings", {})
    return {
        "text": body["choices"][0]["message"]["content"],
        "wall_ms": (time.perf_counter() - started) * 1000,
        "prompt_tokens": body.get("usage", {}).get("prompt_tokens"),
        "cached": timings.get("cache_n"),
        "processed": timings.get("prompt_n"),
        "prompt_ms": timings.get("prompt_ms"),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    with throwaway_django(RAG_EMBEDDING_PROVIDER="local", RAG_CHAT_PROVIDER="local"):
        from django.conf import settings
        from django.core.management import call_command

        from ragapp.graph import prompts
        from ragapp.providers import get_embeddings
        from ragapp.providers.local_llm import local_server
        from ragapp.retrieval.retrievers import build_retriever

        call_command("ingest_docs", str(settings.BASE_DIR / "docs"), stdout=io.StringIO())
        retriever = build_retriever(mode=settings.RAG_RETRIEVAL_MODE, embeddings=get_embeddings())
        server = local_server(args.model)
        client = httpx.Client(
            base_url=server.base_url,
            headers={"Authorization": f"Bearer {server.api_key}"},
            timeout=600,
        )
        rows = []
        for question in QUESTIONS[: args.questions]:
            docs = retriever.search(question, k=settings.RAG_TOP_K)
            answer = complete(client, args.model, prompts.generate_messages(question, docs), 200)
            grade = prompts.grade_answer_messages(question, answer["text"], docs)
            warm = complete(client, args.model, grade, 1)
            cold = complete(client, args.model, grade, 1, cache=False)
            rows.append({"question": question, "warm": warm, "cold": cold})
            print(
                f"{question[:60]:<60} prompt {warm['prompt_tokens']} tokens: warm "
                f"{warm['cached']} cached + {warm['processed']} processed in "
                f"{warm['prompt_ms']:.0f} ms; cold {cold['processed']} processed in "
                f"{cold['prompt_ms']:.0f} ms; ratio {warm['prompt_ms'] / cold['prompt_ms']:.3f}",
                flush=True,
            )
    result = {
        "warm_prompt_ms_median": statistics.median(r["warm"]["prompt_ms"] for r in rows),
        "cold_prompt_ms_median": statistics.median(r["cold"]["prompt_ms"] for r in rows),
        "cached_share_median": statistics.median(
            r["warm"]["cached"] / r["warm"]["prompt_tokens"] for r in rows
        ),
        "rows": rows,
    }
    result["ratio"] = result["warm_prompt_ms_median"] / result["cold_prompt_ms_median"]
    print(
        f"faithfulness prompt, median: warm {result['warm_prompt_ms_median']:.0f} ms, cold "
        f"{result['cold_prompt_ms_median']:.0f} ms, ratio {result['ratio']:.3f}; "
        f"{100 * result['cached_share_median']:.0f}% of its tokens came from the cache"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
