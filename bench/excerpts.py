"""What question-focused excerpts keep and save, on a golden set's real retrievals.

For every answerable question of a golden set, against the knowledge base in RAG_DATA_DIR
(build it first: docs/evaluation.md, "The golden sets"), the graph's first retrieval is made
with the product's retriever, each hit carrying its document's next-best chunk (its companion).
Then, for each budget (`RAG_EXCERPT_CHARS`) and with and without the companions, the excerpts
are cut as the graph cuts them: the first chunk whole (`--cut-first` cuts it too), followed by
an excerpt of its companion; every other chunk cut, with its companion, to the budget.

- **facts shown**: the answerable questions whose expected facts are all in what the model is
  shown (the excerpts and each chunk's section, as prompts.py shows them), against the same
  count for the five whole chunks: a ceiling on fact accuracy that no generator can pass;
- **lost**: the questions whose facts were all in the five whole chunks but are not all shown;
- **characters shown**: the shown documents' length against the five whole chunks', a
  stand-in for the prompt tokens the model reads;
- **excerpt ms**: the time to cut the excerpts (the embedding of their pieces), p50.

It needs no chat model: a whole set takes a minute or two.

    uv run python bench/excerpts.py tests/eval/golden_docs.jsonl
    RAG_DATA_DIR=/work/corpora/git-data uv run python bench/excerpts.py bench/golden/git239.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("golden", type=Path)
    parser.add_argument("--budgets", default="300,400")
    parser.add_argument("--cut-first", action="store_true", help="cut the first chunk too")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings

    from ragapp.evaluation.golden import load_golden
    from ragapp.evaluation.metrics import fact_present
    from ragapp.graph.excerpts import EXCERPT_COMPANIONS, focused
    from ragapp.providers import get_embeddings
    from ragapp.retrieval.retrievers import build_retriever

    embeddings = get_embeddings()
    retriever = build_retriever(mode=settings.RAG_RETRIEVAL_MODE, embeddings=embeddings)
    budgets = [int(b) for b in args.budgets.split(",")]
    items = [item for item in load_golden(args.golden) if item.answerable]
    retrieved = [
        retriever.search(item.question, k=settings.RAG_TOP_K, companions=EXCERPT_COMPANIONS)
        for item in items
    ]

    def shown(docs) -> str:
        return "\n".join(f"{d.heading_path}\n{d.excerpt or d.text}" for d in docs)

    def all_facts(item, text: str) -> bool:
        return all(fact_present(fact, text) for fact in item.facts)

    whole = [all_facts(item, shown(docs)) for item, docs in zip(items, retrieved, strict=True)]
    base_chars = sum(len(shown(docs)) for docs in retrieved)
    rows = []
    for budget in budgets:
        for with_companions in (False, True):
            facts = chars = 0
            lost, ms = [], []
            for item, docs, had in zip(items, retrieved, whole, strict=True):
                if not with_companions:
                    docs = [replace(doc, companions=()) for doc in docs]
                started = time.perf_counter()
                whole_first = 0 if args.cut_first else 1
                cut = focused(docs, item.question, embeddings, budget=budget, whole=whole_first)
                ms.append((time.perf_counter() - started) * 1000)
                chars += len(shown(cut))
                if all_facts(item, shown(cut)):
                    facts += 1
                elif had:
                    lost.append(item.id)
            rows.append(
                {
                    "budget": budget,
                    "companions": EXCERPT_COMPANIONS if with_companions else 0,
                    "facts_shown": facts,
                    "facts_shown_share": round(facts / max(1, len(items)), 3),
                    "chars_shown": round(chars / base_chars, 3),
                    "excerpt_ms_p50": round(statistics.median(ms), 1),
                    "lost": lost,
                }
            )
    result = {
        "golden": str(args.golden),
        "answerable": len(items),
        "facts_in_retrieved_chunks": sum(whole),
        "rows": rows,
    }
    print(
        f"{args.golden.name}: {len(items)} answerable questions, {sum(whole)} with every fact "
        "in the five retrieved chunks"
    )
    print(f"{'budget':>7} {'companions':>10} {'facts shown':>12} {'chars':>6} {'ms':>6}  lost")
    for row in rows:
        print(
            f"{row['budget']:>7} {row['companions']:>10} "
            f"{row['facts_shown']:>5} {row['facts_shown_share']:>6.3f} "
            f"{row['chars_shown']:>6.3f} {row['excerpt_ms_p50']:>6.1f}  {' '.join(row['lost'])}"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
