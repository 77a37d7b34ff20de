"""Question-focused excerpts: the parts of each retrieved chunk that a small model is shown.

On two CPU cores reading the documents is most of a run (docs/evaluation.md, "Speed"): the
1.5B model reads about 85 prompt tokens a second, and five 800-character chunks with their tags
are about 1,050 tokens. Most of a chunk is about its neighbourhood, not the question. An excerpt
keeps the units of the chunk (sentences, list items, table rows, whole code blocks) closest to
the question by embedding, up to a character budget, in their original order, with "[...]" where
something was left out. The chunk itself is unchanged: citations and the sources users see still
read the whole chunk, and the lexical check of specifics reads it and the excerpt.

The page a question is about is found more often than its chunk that holds the answer, so an
excerpt also draws on the chunk's companions: the same document's next-best chunks in the
ranking (`RetrievedDoc.companions`). The first hit is shown whole, followed by an excerpt of its
companions; every other hit's excerpt is cut from its own pieces and its companions' together.

What a budget loses is measured on the golden sets by `bench/excerpts.py`: the share of the
expected facts found in the retrieved chunks that their excerpts still hold.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Protocol

from ragapp.graph.grounding import FENCE_LINE, SENTENCE_BREAK
from ragapp.graph.state import RetrievedDoc

# The conventional mark of words left out of a quotation (ASCII: prompts are NFKC-normalised).
GAP = "[...]"
# How many companions (the document's next-best chunks) an excerpt may draw on. One, with the
# budget down from 400 to 300 characters, raised the questions whose facts are all shown from 41
# to 43 of 56 on this documentation and from 95 to 96 of 132 on the PostgreSQL manual, for about
# the same reading (docs/evaluation.md, "Companions: what the model reads").
EXCERPT_COMPANIONS = 1
# A heading, a list item ("-", "*", "+", "1.") or a table row starts a paragraph of its own.
_BLOCK_START = re.compile(r"^\s*(#{1,6}\s|[-*+]\s|\d+[.)]\s|\|)")


class Embedder(Protocol):
    def embed_query(self, text: str) -> list[float]: ...

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...


def units(text: str) -> list[str]:
    """`text` cut into the pieces an excerpt is made of, in order.

    A fenced code block is one piece (half a command is worse than none). Other text is read as
    paragraphs: a blank line, a heading, a list item or a table row starts a new one, and the
    lines of a paragraph that was wrapped are joined. Each paragraph is cut into its sentences.
    """
    pieces: list[str] = []
    paragraph: list[str] = []

    def close_paragraph() -> None:
        if paragraph:
            joined = " ".join(line.strip() for line in paragraph)
            pieces.extend(part for part in SENTENCE_BREAK.split(joined) if part.strip())
            paragraph.clear()

    fence: list[str] | None = None
    for line in text.splitlines():
        if fence is not None:
            fence.append(line)
            if FENCE_LINE.match(line):
                pieces.append("\n".join(fence))
                fence = None
        elif FENCE_LINE.match(line):
            close_paragraph()
            fence = [line]
        elif not line.strip():
            close_paragraph()
        elif _BLOCK_START.match(line):
            close_paragraph()
            paragraph.append(line)
        else:
            paragraph.append(line)
    close_paragraph()
    if fence is not None:  # a chunk may end inside a code block
        pieces.append("\n".join(fence))
    return pieces


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def excerpt(pieces: list[str], scores: list[float], budget: int) -> str:
    """The best-scoring `pieces` that fit in `budget` characters, in their original order.

    Pieces are taken best first; one that no longer fits is passed over for a shorter one
    further down. The best piece is always kept, cut at a word boundary if it alone is over.
    A piece that is `GAP` itself marks a break (between two chunks) and is never chosen.
    """
    chosen: set[int] = set()
    used = 0
    for index in sorted(range(len(pieces)), key=lambda i: -scores[i]):
        if pieces[index] == GAP:
            continue
        size = len(pieces[index]) + 1
        if used + size <= budget:
            chosen.add(index)
            used += size
    if not chosen and any(piece != GAP for piece in pieces):
        best = max((i for i, p in enumerate(pieces) if p != GAP), key=lambda i: scores[i])
        return pieces[best][:budget].rsplit(" ", 1)[0] + " " + GAP
    lines: list[str] = []
    for index, piece in enumerate(pieces):
        if index in chosen:
            lines.append(piece)
        elif not lines or lines[-1] != GAP:
            lines.append(GAP)
    return "\n".join(lines)


def _length(pieces: list[str]) -> int:
    """The characters `excerpt` counts for `pieces` (a break is not one of them)."""
    return sum(len(piece) + 1 for piece in pieces if piece != GAP)


def _companion_pieces(doc: RetrievedDoc) -> list[str]:
    """The pieces of `doc`'s companions, each chunk's led by a break (they are not contiguous)."""
    return [piece for text in doc.companions for piece in [GAP, *units(text)]]


def focused(
    docs: list[RetrievedDoc], question: str, embedder: Embedder, *, budget: int, whole: int = 0
) -> list[RetrievedDoc]:
    """`docs` with the excerpts the model is shown for `question`.

    The first `whole` docs keep their chunk whole and add an excerpt of at most `budget`
    characters of their companions. Every other doc with companions, or longer than `budget`,
    gets an excerpt of `budget` characters cut from its chunk's and its companions' pieces
    together; a short doc without companions is left as it is.

    One embedding call for the question (cached by the query cache: retrieval embedded it
    already) and one batch for the pieces of every excerpt that cannot keep them all.
    """
    jobs: list[tuple[int, str, list[str]]] = []  # (position, text kept whole, pieces)
    for n, doc in enumerate(docs):
        if n < whole:
            if doc.companions:
                jobs.append((n, doc.text, _companion_pieces(doc)))
        elif doc.companions or len(doc.text) > budget:
            jobs.append((n, "", units(doc.text) + _companion_pieces(doc)))
    jobs = [(n, head, pieces) for n, head, pieces in jobs if any(p != GAP for p in pieces)]
    over = [pieces for _, _, pieces in jobs if _length(pieces) > budget]
    if over:
        target = embedder.embed_query(question)
        vectors = iter(embedder.embed_documents([p for ps in over for p in ps if p != GAP]))
    result = list(docs)
    for n, head, pieces in jobs:
        if _length(pieces) > budget:
            scores = [-1.0 if p == GAP else _cosine(target, next(vectors)) for p in pieces]
        else:
            scores = [0.0] * len(pieces)  # everything fits: nothing to choose
        cut = excerpt(pieces, scores, budget)
        result[n] = replace(docs[n], excerpt=f"{head}\n{cut}" if head else cut)
    return result
