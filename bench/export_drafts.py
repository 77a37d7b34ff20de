"""Export the answers an evaluation's runs wrote, with the documents they were written from.

For the labelled answer-check set (`bench/judge_set.jsonl`): every run of one evaluation that
ended with a model answer (answered, or refused as unfaithful with its withheld draft) becomes
one line in the set's faithfulness format, with `faithful` left null for a person to label.
Its documents are what the answer check read: each hit's path, section and chunk with the
excerpt of its page's next chunk that the model was also shown, then the passages the check added
from the hits' pages (the writer read the later hits' excerpts in place of their chunks).
It reads the knowledge base of RAG_DATA_DIR, where the evaluation ran.

    RAG_DATA_DIR=/work/corpora/eval-data uv run python bench/export_drafts.py pg-v1 out.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("evaluation", help="the evaluation's name (eval_rag --name)")
    parser.add_argument("output", type=Path)
    parser.add_argument("--origin", default="", help="a label for where the drafts come from")
    args = parser.parse_args()
    evaluation, recorded = recorded_evaluation(args.evaluation)
    from ragapp.models import Chunk, QueryRun

    excerpts = excerpts_again(recorded) if recorded["RAG_EXCERPT_CHARS"] else None
    lines = []
    for run in QueryRun.objects.filter(evaluation=evaluation).order_by("created_at"):
        meta = run.response_metadata or {}
        draft = run.answer if run.status == "answered" else meta.get("draft_answer", "")
        generate = run.events.filter(kind="generate").order_by("-seq").first()
        if not draft or generate is None or meta.get("refusal_reason") == "not_in_documents":
            continue
        ids = [source["chunk_id"] for source in generate.payload.get("sources", [])]
        # The answer check also read the passages it added from the hits' own pages for what the
        # answer names (graph.md, "grade_answer"); an answer shown lists them among its sources,
        # so a label must judge the draft against them too.
        for check in run.events.filter(kind="grade_answer").order_by("seq"):
            for source in check.payload.get("supporting_documents") or []:
                if source["chunk_id"] not in ids:
                    ids.append(source["chunk_id"])
        chunks = Chunk.objects.select_related("document").in_bulk(ids)
        retrieve = run.events.filter(kind="retrieve").order_by("seq").first()
        hits = [doc["chunk_id"] for doc in retrieve.payload["documents"]] if retrieve else []
        # A follow-up was searched with its standalone form (graph.md, "condense").
        query = meta.get("standalone_question") or run.query
        # With RAG_HYDE the search was for the question and the passage the model wrote for it.
        passage = retrieve.payload.get("hypothesis", "") if retrieve else ""
        added = excerpts(query, hits, passage) if excerpts and hits else {}
        lines.append(
            {
                "kind": "faithfulness",
                "id": f"{args.evaluation}-{len(lines) + 1:03d}",
                "question": run.query,
                # The model saw each document's path and section (prompts.py), and the answer
                # check finds a source file an answer names there ("see configuration.md").
                "documents": [
                    f"{chunks[i].document.public_path}\n"
                    f"{chunks[i].heading_path or chunks[i].document.title}\n\n"
                    f"{chunks[i].text}{added.get(i, '')}"
                    for i in ids
                    if i in chunks
                ],
                "answer": draft,
                "faithful": None,
                "origin": args.origin or args.evaluation,
                "note": "",
            }
        )
    args.output.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"{len(lines)} drafts written to {args.output}")


# The settings that decide which chunks a run's first retrieval found and what it showed of them.
RETRIEVAL = ("RAG_RETRIEVAL_MODE", "RAG_TOP_K", "RAG_EXCERPT_CHARS")


def searches(run) -> list:
    """The run's `retrieve` events that searched, in order: not a second read of the pages found
    after a refusal (`read_on`, RAG_READ_ON), which reads what the first search found."""
    events = run.events.filter(kind="retrieve").order_by("seq")
    return [event for event in events if not event.payload.get("read_on")]


def recorded_evaluation(name: str):
    """Django set up, the newest evaluation called `name`, and the retrieval settings it ran with.

    The retrieval is made again as the evaluation made it, whatever this shell's settings say.
    """
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.conf import settings

    from ragapp.models import Evaluation

    # Names repeat (they default to the golden file's name): the newest evaluation of that name.
    evaluation = Evaluation.objects.filter(name=name).order_by("-created_at").first()
    if evaluation is None:
        raise SystemExit(f"No evaluation called {name!r} in this knowledge base.")
    return evaluation, {**{n: getattr(settings, n) for n in RETRIEVAL}, **evaluation.settings}


def excerpts_again(recorded: dict):
    """A function giving, per chunk id, what the answer check read of a hit beyond its chunk.

    With excerpts on (the local default), the first hit was shown whole and followed by pieces of
    its page's next-best chunk, and every other hit by an excerpt cut from its chunk and that
    next chunk (graph/excerpts.py); the answer check reads each chunk and its excerpt
    (`support_text`), while the writer read the later hits' excerpts in place of their chunks.
    """
    again = retrieval_again(recorded)

    def added(question: str, hits: list[int], passage: str = "") -> dict[int, str]:
        docs = again(question, hits, passage) or []
        # The first hit's excerpt opens with the hit itself, which the document already holds.
        return {
            doc.chunk_id: "\n\n[...] " + doc.excerpt.removeprefix(f"{doc.text}\n")
            for doc in docs
            if doc.companions and doc.excerpt
        }

    return added


def retrieval_again(recorded: dict):
    """A function giving a run's first retrieval as the graph showed it to the model, or None.

    The trace keeps no texts, so the first retrieval is made again for the run's question (and,
    with RAG_HYDE, the passage its trace recorded) with the product's retriever and the
    evaluation's settings, and cut to excerpts as the graph cuts them. Where its hits are not the
    ones the run recorded (the knowledge base changed), it gives None and a warning says so.
    """
    from ragapp.graph.excerpts import EXCERPT_COMPANIONS, focused
    from ragapp.graph.hypothesis import search_text
    from ragapp.providers import get_embeddings
    from ragapp.retrieval.retrievers import build_retriever

    embeddings = get_embeddings()
    retriever = build_retriever(mode=recorded["RAG_RETRIEVAL_MODE"], embeddings=embeddings)
    budget, top_k = recorded["RAG_EXCERPT_CHARS"], recorded["RAG_TOP_K"]

    def again(question: str, hits: list[int], passage: str = ""):
        query = search_text(question, passage)
        docs = retriever.search(query, k=top_k, companions=EXCERPT_COMPANIONS if budget else 0)
        if [doc.chunk_id for doc in docs] != hits:
            changed = "not the run's hits (the knowledge base changed)"
            print(f"{changed}: {question[:60]!r}", file=sys.stderr)
            return None
        return focused(docs, question, embeddings, budget=budget, whole=1) if budget else docs

    return again


if __name__ == "__main__":
    main()
