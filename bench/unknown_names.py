"""What the unknown-names check catches, and what it costs beside the retrieval it rides on.

For every question of a golden set, against the knowledge base in RAG_DATA_DIR (build it first:
docs/evaluation.md, "The golden sets"), the question's technical names are looked up as the
graph's first retrieval looks them up (`RAG_REFUSE_UNKNOWN_NAMES`, retrieval/coverage.py):

- **caught**: the unanswerable questions with a name no chunk holds (they are refused at once);
- **wrongly caught**: the answerable ones (they would be refused too, and must be none);
- **cost**: the lookup's time against the hybrid retrieval's for the same questions, measured in
  the same run, as a ratio (the machine's speed cancels out), with both p50s.

It needs no chat model: a whole set takes seconds.

    uv run python bench/unknown_names.py tests/eval/golden_docs.jsonl
    RAG_DATA_DIR=/work/corpora/eval-data uv run python bench/unknown_names.py \\
        bench/golden/postgresql15.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("golden", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--show", action="store_true", help="print each caught question's names")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings

    from ragapp.evaluation.golden import load_golden
    from ragapp.providers import get_embeddings
    from ragapp.retrieval.coverage import never_mentioned, technical_names
    from ragapp.retrieval.retrievers import build_retriever

    items = load_golden(args.golden)
    retriever = build_retriever(mode="hybrid", embeddings=get_embeddings())
    for item in items[:3]:  # warm the embedding model and the database's caches
        retriever.search(item.question, k=settings.RAG_TOP_K)
        never_mentioned(technical_names(item.question))
    lookup_ms, search_ms = [], []
    caught = {True: 0, False: 0}
    for item in items:
        started = time.perf_counter()
        retriever.search(item.question, k=settings.RAG_TOP_K)
        search_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        unknown = never_mentioned(technical_names(item.question))
        lookup_ms.append((time.perf_counter() - started) * 1000)
        if unknown:
            caught[item.answerable] += 1
            if args.show:
                print(f"{item.id} {'answerable' if item.answerable else 'unanswerable'}: {unknown}")
    answerable = sum(item.answerable for item in items)
    result = {
        "golden": str(args.golden),
        "questions": len(items),
        "unanswerable_caught": caught[False],
        "unanswerable": len(items) - answerable,
        "answerable_caught": caught[True],
        "answerable": answerable,
        "lookup_ms_p50": round(statistics.median(lookup_ms), 2),
        "search_ms_p50": round(statistics.median(search_ms), 2),
        "lookup_to_search_ratio": round(sum(lookup_ms) / sum(search_ms), 3),
    }
    print(
        f"caught {result['unanswerable_caught']} of {result['unanswerable']} unanswerable, "
        f"{result['answerable_caught']} of {answerable} answerable; lookup p50 "
        f"{result['lookup_ms_p50']} ms, retrieval p50 {result['search_ms_p50']} ms, "
        f"lookup / retrieval {result['lookup_to_search_ratio']}x"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
