"""Question-focused excerpts: the parts of each retrieved chunk that a small model is shown.

On two CPU cores reading the documents is most of a run (docs/evaluation.md, "Speed"): the
1.5B model reads about 85 prompt tokens a second, and five 800-character chunks with their tags
are about 1,050 tokens. Most of a chunk is about its neighbourhood, not the question. An excerpt
keeps the units of the chunk (sentences, list items, table rows, whole code blocks) closest to
the question by embedding, up to a character budget, in their original order, with "[...]" where
something was left out. The chunk itself is unchanged: citations, the sources users see and
the lexical check of specifics still read the whole chunk.

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
    """
    chosen: set[int] = set()
    used = 0
    for index in sorted(range(len(pieces)), key=lambda i: -scores[i]):
        size = len(pieces[index]) + 1
        if used + size <= budget:
            chosen.add(index)
            used += size
    if not chosen and pieces:
        best = max(range(len(pieces)), key=lambda i: scores[i])
        return pieces[best][:budget].rsplit(" ", 1)[0] + " " + GAP
    lines: list[str] = []
    for index, piece in enumerate(pieces):
        if index in chosen:
            lines.append(piece)
        elif not lines or lines[-1] != GAP:
            lines.append(GAP)
    return "\n".join(lines)


def focused(
    docs: list[RetrievedDoc], question: str, embedder: Embedder, *, budget: int
) -> list[RetrievedDoc]:
    """`docs`, each longer than `budget` characters given its excerpt for `question`.

    One embedding call for the question (cached by the query cache: retrieval embedded it
    already) and one batch for every piece of every long chunk.
    """
    long = [(n, units(doc.text)) for n, doc in enumerate(docs) if len(doc.text) > budget]
    long = [(n, pieces) for n, pieces in long if pieces]
    if not long:
        return docs
    target = embedder.embed_query(question)
    vectors = iter(embedder.embed_documents([piece for _, pieces in long for piece in pieces]))
    result = list(docs)
    for n, pieces in long:
        scores = [_cosine(target, next(vectors)) for _ in pieces]
        result[n] = replace(docs[n], excerpt=excerpt(pieces, scores, budget))
    return result
