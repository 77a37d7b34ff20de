"""Where an evaluation's answerable questions ended, by whether the writer had their facts.

For each answerable question of one evaluation (`eval_rag --name`), in the knowledge base of
RAG_DATA_DIR where it ran, the run's first retrieval is made again as the graph made it: the
question and the passage its trace recorded (RAG_HYDE), the evaluation's settings, the hits cut
to their excerpts (`export_drafts.retrieval_again`). A question's facts were **shown** when every
expected fact is in that text, each hit's section included. When they were not, it says how far
off they were:

- **cut by the excerpt**: every fact is in the five hits' chunks and companions, read whole;
- **another chunk of a found page**: in the chunks of the five hits' pages;
- **source page not found**: on the golden set's source pages, which the five hits missed;
- **on no one page**: not on a found page nor on a source page, as the golden set writes them.

Each is crossed with how the run ended: right (every fact in the answer), wrong, or refused by
the answer check (`unfaithful`), by the writer itself (`not_in_documents`), at the relevance
gate, for names the knowledge base never mentions, or failed. It also counts the questions whose
facts were not shown but which a hit ranked 6-10 holds alone, as its excerpt would show it: the
most that re-ranking ten hits into five could add (stop 68 measured 0-2 a set).

    RAG_DATA_DIR=/work/corpora/openssl-data uv run python bench/where_facts_end.py \\
        bench/golden/openssl30.jsonl ossl-s64base
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # export_drafts, beside this script

SHOWN = "shown"
WHERE = (
    SHOWN,
    "cut by the excerpt",
    "another chunk of a found page",
    "source page not found",
    "on no one page",
)
OUTCOMES = ("right", "wrong", "check refused", "writer declined", "gate refused",
            "unknown names", "failed")  # fmt: skip
# Hits ranked after the fifth that the re-ranking ceiling looks at.
RERANK_DEPTH = 10


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("golden", type=Path)
    parser.add_argument("evaluation", help="the evaluation's name (eval_rag --name)")
    parser.add_argument("--json", type=Path, help="write the table and every question's row here")
    args = parser.parse_args()
    from export_drafts import recorded_evaluation, retrieval_again

    evaluation, recorded = recorded_evaluation(args.evaluation)
    from ragapp.evaluation.golden import load_golden

    again, deeper = retrieval_again(recorded), _deeper_hits(recorded)
    runs = {run.query: run for run in evaluation.runs.all()}
    rows = []
    for item in load_golden(args.golden):
        run = runs.get(item.question)
        if not item.answerable or run is None:
            continue
        row = _placed(item, run, again, deeper)
        if row is not None:
            rows.append(row)
    table = Counter((row["where"], row["outcome"]) for row in rows)
    result = {
        "golden": str(args.golden),
        "evaluation": args.evaluation,
        "answerable": len(rows),
        "table": {where: {out: table[(where, out)] for out in OUTCOMES} for where in WHERE},
        "shown": sum(row["where"] == SHOWN for row in rows),
        "rerank_ceiling": sum(row["ranks_6_10_show"] for row in rows),
        "rows": rows,
    }
    _print(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return result


def _placed(item, run, again, deeper) -> dict | None:
    """The question's row, or None where its retrieval cannot be made again."""
    from ragapp.evaluation.metrics import fact_present

    def holds(text: str) -> bool:
        return all(fact_present(fact, text) for fact in item.facts)

    retrieve = run.events.filter(kind="retrieve").order_by("seq").first()
    if retrieve is None:  # refused before any search: no retrieval to place the facts in
        return None
    hits = [doc["chunk_id"] for doc in retrieve.payload["documents"]]
    passage = retrieve.payload.get("hypothesis", "")
    docs = again(run.query, hits, passage)
    if docs is None:
        return None
    where = _where(item, docs, holds)
    lower = deeper(run.query, passage) if where != SHOWN else []
    return {
        "id": item.id,
        "where": where,
        "outcome": _outcome(run, holds),
        "ranks_6_10_show": any(holds(f"{d.heading_path}\n{d.excerpt or d.text}") for d in lower),
    }


def _where(item, docs, holds) -> str:
    from django.db.models import Q

    from ragapp.models import Chunk

    if holds("\n".join(f"{doc.heading_path}\n{doc.excerpt or doc.text}" for doc in docs)):
        return SHOWN
    if holds("\n".join(f"{d.heading_path}\n{d.text}\n" + "\n".join(d.companions) for d in docs)):
        return "cut by the excerpt"
    found = Chunk.objects.filter(document_id__in={doc.document_id for doc in docs})
    if holds(_joined(found)):
        return "another chunk of a found page"
    sources = Q(pk__in=[])
    for source in item.sources:
        sources |= Q(document__source_path__endswith=source)
    if item.sources and holds(_joined(Chunk.objects.filter(sources))):
        return "source page not found"
    return "on no one page"


def _joined(chunks) -> str:
    return "\n".join(f"{chunk.heading_path}\n{chunk.text}" for chunk in chunks.order_by("pk"))


def _outcome(run, holds) -> str:
    meta = run.response_metadata or {}
    if run.status == "answered":
        return "right" if holds(run.answer) else "wrong"
    if run.status != "refused":
        return "failed"
    reason = meta.get("refusal_reason")
    if reason == "unfaithful":
        return "check refused"
    if reason == "not_in_documents":
        return "writer declined"
    return "unknown names" if meta.get("unknown_names") else "gate refused"


def _deeper_hits(recorded: dict):
    """A function giving a search's hits ranked 6-10, each cut as it would be shown at rank 2-5."""
    from ragapp.graph.excerpts import EXCERPT_COMPANIONS, focused
    from ragapp.graph.hypothesis import search_text
    from ragapp.providers import get_embeddings
    from ragapp.retrieval.retrievers import build_retriever

    embeddings = get_embeddings()
    retriever = build_retriever(mode=recorded["RAG_RETRIEVAL_MODE"], embeddings=embeddings)
    budget, top_k = recorded["RAG_EXCERPT_CHARS"], recorded["RAG_TOP_K"]

    def deeper(question: str, passage: str):
        docs = retriever.search(
            search_text(question, passage),
            k=RERANK_DEPTH,
            companions=EXCERPT_COMPANIONS if budget else 0,
        )[top_k:]
        # None of them would be the first hit, the one shown whole.
        return focused(docs, question, embeddings, budget=budget) if budget else docs

    return deeper


def _print(result: dict) -> None:
    print(f"{result['evaluation']}: {result['answerable']} answerable questions placed")
    # The outcome's first word heads its column: right, wrong, check, writer, gate, unknown, failed.
    print(f"{'':30}" + "".join(f"{out.split()[0]:>8}" for out in OUTCOMES))
    for where, outcomes in result["table"].items():
        print(f"{where:30}" + "".join(f"{outcomes[out]:>8}" for out in OUTCOMES))
    print(
        f"facts shown for {result['shown']}; a hit ranked 6-{RERANK_DEPTH} holds them alone "
        f"for {result['rerank_ceiling']} more (the re-ranking ceiling)"
    )


if __name__ == "__main__":
    main()
