"""Export the answers an evaluation's runs wrote, with the documents they were written from.

For the labelled answer-check set (`bench/judge_set.jsonl`): every run of one evaluation that
ended with a model answer (answered, or refused as unfaithful with its withheld draft) becomes
one line in the set's faithfulness format, with `faithful` left null for a person to label.
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
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from ragapp.models import Chunk, Evaluation, QueryRun

    # Names repeat (they default to the golden file's name): the newest evaluation of that name.
    evaluation = Evaluation.objects.filter(name=args.evaluation).order_by("-created_at").first()
    if evaluation is None:
        raise SystemExit(f"No evaluation called {args.evaluation!r} in this knowledge base.")
    lines = []
    for run in QueryRun.objects.filter(evaluation=evaluation).order_by("created_at"):
        meta = run.response_metadata or {}
        draft = run.answer if run.status == "answered" else meta.get("draft_answer", "")
        generate = run.events.filter(kind="generate").order_by("-seq").first()
        if not draft or generate is None or meta.get("refusal_reason") == "not_in_documents":
            continue
        ids = [source["chunk_id"] for source in generate.payload.get("sources", [])]
        chunks = Chunk.objects.in_bulk(ids)
        lines.append(
            {
                "kind": "faithfulness",
                "id": f"{args.evaluation}-{len(lines) + 1:03d}",
                "question": run.query,
                "documents": [
                    f"{chunks[i].heading_path}\n\n{chunks[i].text}" for i in ids if i in chunks
                ],
                "answer": draft,
                "faithful": None,
                "origin": args.origin or args.evaluation,
                "note": "",
            }
        )
    args.output.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"{len(lines)} drafts written to {args.output}")


if __name__ == "__main__":
    main()
