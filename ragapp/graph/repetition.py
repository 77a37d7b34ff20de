"""An answer cut where it starts repeating itself, or back to its last whole sentence.

At temperature 0 a small model sometimes falls into a loop: the same sentence, or the same two
list items, again and again until its token cap ("If the ingestion fails, ... If the ingestion
is successful, ..." fifteen times, from the 1.5B model on this documentation). What came before
the loop is a real answer; the loop adds nothing, and the answer check would spend a model call
on each copy.

The check also runs while the answer is being written (`repeats_already`): the generator stops
reading the model's reply at the first loop, so the model does not spend the rest of its token cap
writing copies that would be cut anyway.

An answer that ran into its token cap (`RAG_ANSWER_MAX_TOKENS`) ends mid-sentence, or inside a
code block; what was finished is kept and the unfinished tail goes.
"""

from __future__ import annotations

import re

from ragapp.graph.grounding import FENCE_LINE, SENTENCE_BREAK, claim_text

MIN_WORDS = 4  # "Run:" or "For example:" twice is not a loop
# A short list item is a loop on its third copy: a list of formats or options ("- YAML",
# "- JSON") that runs "- YAML - JSON - YAML - JSON ..." to the token cap. Twice can be two lists.
SHORT_ITEM_COPIES = 3
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
_NUMBER = re.compile(r"^\s*\d+[.)]$")  # a list item's number, all a line holds before a break
# A sentence's end: its full stop (or ! ?), then perhaps closing marks and citations ("." [1]).
_FINISHED = re.compile(r"[.!?][\"')*_`]*(?:\s*\[\d+\])*\s*$")
# A line that introduces what follows ("Run:"), which the cap cut.
_INTRODUCES = re.compile(r":[*_]*(?:\s*\[\d+\])*\s*$")


def _sentences(offset: int, line: str) -> list[tuple[int, str]]:
    """(offset, text) of each sentence of `line`, which starts at `offset` in the answer."""
    # "2. **If it fails**" is one sentence: a list number's full stop ends nothing.
    breaks = [m for m in SENTENCE_BREAK.finditer(line) if not _NUMBER.match(line[: m.start()])]
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
            if FENCE_LINE.match(line):
                units.append((fence_start, answer[fence_start : offset + len(line)]))
                fence_start = None
        elif FENCE_LINE.match(line):
            fence_start = offset
        elif line.strip():
            units.extend(_sentences(offset, line))
        offset += len(line)
    return units


def _key(text: str) -> str:
    # "3. **If it fails** ... [8]" repeats "1. **If it fails** ... [7]": the claims check's form
    # of a sentence drops list numbers, emphasis and citations, which a loop counts up.
    return claim_text(text).casefold()


def without_repetition(answer: str) -> str:
    """`answer` up to the first sentence (or code block) that repeats an earlier one word for
    word, list numbers, citations and emphasis aside, or up to the second copy of a short list
    item that comes a third time; unchanged when nothing repeats."""
    seen: set[str] = set()
    short_items: dict[str, list[int]] = {}  # a short list item's offsets, by its text
    for offset, text in _units(answer):
        key = _key(text)
        if len(key.split()) < MIN_WORDS:
            if key and _LIST_ITEM.match(text):
                copies = short_items.setdefault(key, [])
                copies.append(offset)
                if len(copies) == SHORT_ITEM_COPIES:
                    return answer[: copies[1]].rstrip()  # the loop began at its second copy
            continue
        if key in seen:
            return answer[:offset].rstrip()
        seen.add(key)
    return answer


def without_unfinished_tail(answer: str) -> str:
    """`answer`, which stopped at its token cap, up to the end of its last finished unit.

    Every sentence, list item or line the model went on from is finished, and so is a closed code
    block; the last sentence is finished only if it ends like one. An unclosed code block is cut
    whole, and so is the line that introduced it ("Run:"). When nothing is finished (the cap
    came inside the first sentence), the answer is kept as it is: the answer check judges it.
    """
    units = _units(answer)
    if units and not FENCE_LINE.match(units[-1][1]) and not _FINISHED.search(units[-1][1]):
        units = units[:-1]
    while units and _INTRODUCES.search(units[-1][1]):
        units = units[:-1]
    if not units:
        return answer
    offset, text = units[-1]
    return answer[: offset + len(text)].rstrip()


def repeats_already(partial: str) -> bool:
    """Whether a reply still being written already repeats itself in its finished part.

    Its last sentence (or line, or code block) may still grow, so only what comes before it is
    looked at. A sentence or code block once followed by another never changes, so the cut that
    `without_repetition` then makes is the one it would make on the whole reply: stopping the
    reply here changes nothing in the answer but its length on the wire.
    """
    units = _units(partial)
    if len(units) < 2:
        return False
    finished = partial[: units[-1][0]]
    return without_repetition(finished) != finished
