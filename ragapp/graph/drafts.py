"""What the graph keeps of the writer's reply: its draft answer.

`generate` and the benchmarks that replay the writer (bench/writer_replay.py,
bench/writer_confidence.py) make a draft from a reply the same way, here, so a replay scores
exactly what a run would have kept:

- the <answer> tags a small model copies from the prompts go;
- a reply that ran into its token cap (`RAG_ANSWER_MAX_TOKENS`) loses its unfinished tail;
- a reply that fell into a loop loses the loop (repetition.py).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ragapp.graph.repetition import repeats_already, without_repetition, without_unfinished_tail

_ANSWER_TAG = re.compile(r"^\s*<answer>\s*|\s*</answer>\s*$", re.IGNORECASE)


class Draft(NamedTuple):
    """A reply at each step of the cut; the trace reports what each step took away."""

    written: str  # the reply without <answer> tags
    finished: str  # without its unfinished tail when the reply was capped
    answer: str  # without repetition: the draft itself


def unwrapped(text: str) -> str:
    """A written answer without the <answer> tags a small model copies from the prompts."""
    return _ANSWER_TAG.sub("", text)


def repeating(text: str) -> bool:
    """Whether a reply still being written has begun to repeat itself (stop reading it there)."""
    return repeats_already(unwrapped(text))


def draft_of(reply: str, *, capped: bool) -> Draft:
    """The draft the graph keeps of `reply`; `capped`: it ran into its token cap."""
    written = unwrapped(reply)
    finished = without_unfinished_tail(written) if capped else written
    return Draft(written, finished, without_repetition(finished))
