"""An answer cut where it starts repeating itself.

At temperature 0 a small model sometimes falls into a loop: the same sentence, or the same two
list items, again and again until its token cap ("If the ingestion fails, ... If the ingestion
is successful, ..." fifteen times, from the 1.5B model on this documentation). What came before
the loop is a real answer; the loop adds nothing, and the answer check would spend a model call
on each copy.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(```|~~~)")
# List numbering, bullets, heading marks and emphasis: "3. **If it fails**" repeats "1. **If it
# fails**" whatever its number.
_MARKUP = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#{1,6})\s+|\*\*|__|`")
MIN_WORDS = 4  # "Run:" or "For example:" twice is not a loop


# Where a sentence ends inside a line: after . ! or ? and a space, before what starts the next.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*_\[(\"'])")
# "Use Git LFS to track PSD files. [8]" repeats "... [7]": the model counts its citations up.
_CITATION = re.compile(r"\s*\[\d{1,3}\]")
_NUMBER = re.compile(r"^\s*\d+[.)]$")


def _sentences(offset: int, line: str) -> list[tuple[int, str]]:
    """(offset, text) of each sentence of `line`, which starts at `offset` in the answer."""
    # "2. **If it fails**" is one sentence: a list number's full stop ends nothing.
    breaks = [m for m in _SENTENCE_END.finditer(line) if not _NUMBER.match(line[: m.start()])]
    starts = [0] + [match.end() for match in breaks]
    ends = [match.start() for match in breaks] + [len(line)]
    return [(offset + start, line[start:end]) for start, end in zip(starts, ends, strict=True)]


def _units(answer: str) -> list[tuple[int, str]]:
    """(offset, text) of each sentence of `answer`, a fenced code block counting as one."""
    units: list[tuple[int, str]] = []
    offset = 0
    fence_start: int | None = None
    for line in answer.splitlines(keepends=True):
        if fence_start is not None:
            if _FENCE.match(line):
                units.append((fence_start, answer[fence_start : offset + len(line)]))
                fence_start = None
        elif _FENCE.match(line):
            fence_start = offset
        elif line.strip():
            units.extend(_sentences(offset, line))
        offset += len(line)
    return units


def _key(text: str) -> str:
    return " ".join(_MARKUP.sub("", _CITATION.sub("", text)).casefold().split())


def without_repetition(answer: str) -> str:
    """`answer` up to the first sentence (or code block) that repeats an earlier one word for
    word, list numbers, citations and emphasis aside; unchanged when nothing repeats."""
    seen: set[str] = set()
    for offset, text in _units(answer):
        key = _key(text)
        if len(key.split()) < MIN_WORDS:
            continue
        if key in seen:
            return answer[:offset].rstrip()
        seen.add(key)
    return answer
