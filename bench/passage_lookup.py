"""Offline: the names the search passage gives, looked up on the pages the search found.

Measured and not adopted (docs/evaluation.md, "Where the facts are; the passage's names looked
up, not adopted; a product's name of common words (2026-12-07, stop 64)"). A reference page is
found more often than its chunk that answers, and the passage the model writes for the search
(RAG_HYDE) often names the option that answers (`-nokeys`, `-subj`). This looks up the passage's
names (not numbers) that what the writer is shown lacks, as words, in the chunks of the found
pages, and adds the pieces holding them (the unit with the name and the one after it, at most
`--budget` characters) to the excerpt of their page's hit: the rarest name first, a chunk whose
line opens with the name (one that defines it) counted double. A name in a hit's whole chunk
counts as shown, as the answer check reads it (`judges.support_text`), even where its excerpt
cut it.

For each run of evaluation NAME with one retrieval (answerable and unanswerable questions), the
retrieval is made again as `writer_replay` makes it (the recorded hits and passage), and it
prints the questions the lookup fires on, the answerable questions whose expected facts are all
in the writer's prompt before and after, and the prompt's length after against before. No chat
model: a set takes a minute. `--fired FILE` writes the golden lines it fires on, for asking
them again with `manage.py eval_rag`; the end-to-end runs used a graph hook that was not kept.

    RAG_DATA_DIR=/work/corpora/openssl-data uv run python bench/passage_lookup.py \\
        ossl-s64base bench/golden/openssl30.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import writer_replay

writer_replay.setup()  # the graph's modules read the settings when they are imported

from ragapp.graph.excerpts import GAP, units  # noqa: E402
from ragapp.graph.grounding import contains_term, folded  # noqa: E402
from ragapp.graph.judges import unsupported_specifics  # noqa: E402
from ragapp.graph.state import RetrievedDoc  # noqa: E402

# How long a looked-up piece may be: the product's excerpt budget (RAG_EXCERPT_CHARS).
PASSAGE_PIECE_CHARS = 300
# A number (a port, a count, a version) is no name to look up.
_NUMBER = re.compile(r"[\d.,:]+")
# What may come before a term that opens a line that defines it: markup, not words.
_LINE_MARKUP = " \t*#|>`_:"


def passage_names(question: str, passage: str, docs: list[RetrievedDoc]) -> list[str]:
    """The names `passage` gives (no numbers) that what `docs` show does not hold.

    `question` is read as the answer check reads it (`lexical_support`): the user's own names
    and what their code defines are no claim of the passage.
    """
    if not passage.strip():
        return []
    return [t for t in unsupported_specifics(question, passage, docs) if not _NUMBER.fullmatch(t)]


def defines(text: str, term: str) -> bool:
    """Whether a line of `text` opens with `term`, as a manual's option list or a table does."""
    return any(line.lstrip(_LINE_MARKUP).casefold().startswith(term) for line in text.splitlines())


def chosen_pieces(
    names: list[str], candidates: list[RetrievedDoc], *, limit: int
) -> list[tuple[RetrievedDoc, list[str]]]:
    """At most `limit` of `candidates` with the names each is chosen for.

    A name held by few chunks of the pages says more than one every chunk holds (`-out` is on
    every line of a manual's examples), and a chunk whose line opens with the name defines it:
    each pick is the chunk with the rarest name not yet covered, doubled where it defines it;
    ties go to page order.
    """
    holding = []
    for doc in candidates:
        source = folded(doc.text)
        held = [name for name in names if contains_term(source, name)]
        if held:
            holding.append((doc, held))
    chunks_holding = Counter(name for _, held in holding for name in held)
    picked: list[tuple[RetrievedDoc, list[str]]] = []
    covered: set[str] = set()
    while len(picked) < limit:
        best = None
        for order, (doc, held) in enumerate(holding):
            new = [name for name in held if name not in covered]
            if not new:
                continue
            weight = max(
                (2.0 if defines(doc.text, name) else 1.0) / chunks_holding[name] for name in new
            )
            if best is None or (weight, -order) > best[0]:
                best = ((weight, -order), doc, new)
        if best is None:
            break
        picked.append((best[1], best[2]))
        covered.update(best[2])
    return picked


def piece(text: str, names: list[str], budget: int) -> str:
    """The units of `text` that hold one of `names`, each with the unit after it, in `budget`.

    A unit longer than the budget is cut to a window that starts shortly before the name.
    """
    pieces = units(text)
    wanted: list[int] = []
    for n, unit in enumerate(pieces):
        if any(contains_term(folded(unit), name) for name in names):
            wanted += [n, n + 1]
    kept: list[str] = []
    used = 0
    for n in sorted(set(wanted)):
        if n >= len(pieces):
            continue
        unit = pieces[n]
        if len(unit) > budget:
            unit = _window(unit, names, budget)
        if used + len(unit) + 1 > budget:
            break
        kept.append(unit)
        used += len(unit) + 1
    return "\n".join(kept)


def _window(unit: str, names: list[str], budget: int) -> str:
    """At most `budget` characters of `unit` from a word boundary shortly before a name in it."""
    source = unit.casefold()
    starts = [source.find(name) for name in names if name in source]
    start = max(0, min(starts) - budget // 5) if starts else 0
    if start:
        start = unit.find(" ", start) + 1 or start
    window = unit[start : start + budget]
    if start + budget < len(unit):
        window = window.rsplit(" ", 1)[0]
    return window


def with_looked_up(
    docs: list[RetrievedDoc],
    question: str,
    passage: str,
    mentioning,
    *,
    limit: int,
    budget: int,
) -> tuple[list[RetrievedDoc], list[str]]:
    """`docs` with the pieces of their pages that hold the passage's names; the names found.

    `mentioning(document_ids, terms, exclude=chunk_ids)` gives the chunks of those pages that
    hold any of the terms (`Retriever.mentioning`). Each piece joins the excerpt of the first hit
    of its page, after a break. Nothing changes when the passage names nothing the pages hold.
    """
    names = passage_names(question, passage, docs)
    if not names or limit <= 0:
        return docs, []
    pages = list(dict.fromkeys(doc.document_id for doc in docs))
    candidates = mentioning(pages, names, exclude=[doc.chunk_id for doc in docs])
    result = list(docs)
    found: list[str] = []
    for chunk, held in chosen_pieces(names, candidates, limit=limit):
        text = piece(chunk.text, held, budget)
        if not text:
            continue
        n = next(i for i, doc in enumerate(result) if doc.document_id == chunk.document_id)
        shown = result[n].excerpt or result[n].text
        result[n] = replace(result[n], excerpt=f"{shown}\n{GAP}\n{text}")
        found += held
    return result, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="the evaluation whose runs' retrievals are looked up again")
    parser.add_argument("golden", type=Path)
    parser.add_argument("--limit", type=int, default=2, help="chunks looked up at most (2)")
    parser.add_argument("--budget", type=int, default=PASSAGE_PIECE_CHARS)
    parser.add_argument("--fired", type=Path, help="write the golden lines it fires on here")
    args = parser.parse_args()
    from django.conf import settings
    from export_drafts import RETRIEVAL, retrieval_again, searches

    from ragapp.evaluation.golden import load_golden
    from ragapp.evaluation.metrics import fact_present
    from ragapp.graph import prompts
    from ragapp.models import Evaluation, QueryRun
    from ragapp.retrieval.retrievers import chunks_mentioning

    evaluation = Evaluation.objects.filter(name=args.name).order_by("-created_at").first()
    if evaluation is None:
        raise SystemExit(f"No evaluation called {args.name!r} in this knowledge base.")
    again = retrieval_again({**{k: getattr(settings, k) for k in RETRIEVAL}, **evaluation.settings})
    items = {item.question: item for item in load_golden(args.golden)}
    lines = {json.loads(line)["question"]: line for line in args.golden.open() if line.strip()}
    shown, fired, length = Counter(), [], [0, 0]
    for run in QueryRun.objects.filter(evaluation=evaluation).order_by("created_at"):
        item = items.get(run.query)
        retrievals = searches(run)
        if item is None or len(retrievals) != 1:
            continue
        found = retrievals[0].payload
        passage = found.get("hypothesis", "")
        docs = again(run.query, [doc["chunk_id"] for doc in found["documents"]], passage)
        if docs is None:
            continue
        looked, names = with_looked_up(
            docs, run.query, passage, chunks_mentioning, limit=args.limit, budget=args.budget
        )

        def prompt(question, documents):
            usable = list(range(1, len(documents) + 1))
            messages = prompts.generate_messages(question, documents, usable)
            return "\n".join(message.content for message in messages)

        before, after = prompt(run.query, docs), prompt(run.query, looked)
        length[0] += len(before)
        length[1] += len(after)
        if names:
            fired.append(lines[run.query])
        if item.answerable:
            facts = [all(fact_present(f, text) for f in item.facts) for text in (before, after)]
            shown[tuple(facts)] += 1
            if names:
                print(f"{item.id}: {names}; facts shown {facts[0]} -> {facts[1]}")
        elif names:
            print(f"{item.id} (unanswerable): {names}")
    answerable = sum(shown.values())
    print(
        f"fires on {len(fired)} runs; facts shown {sum(n for (b, _), n in shown.items() if b)}"
        f" -> {sum(n for (_, a), n in shown.items() if a)} of {answerable} answerable;"
        f" prompt characters {length[1] / max(1, length[0]):.3f} of before"
    )
    if args.fired:
        args.fired.write_text("".join(fired))


if __name__ == "__main__":
    main()
