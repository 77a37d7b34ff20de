"""Metric functions of the evaluation harness: pure, small, and tested on hand-made cases."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence

_SPACE = re.compile(r"\s+")
_DIGIT_GROUP = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")  # 4,000 -> 4000


def normalize(text: str) -> str:
    """Lower case, one space for any run of whitespace, digit-group commas dropped."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE.sub(" ", _DIGIT_GROUP.sub("", text)).strip()


# A fact, or its alternatives: a golden line may give ["-t", "--table"] for one fact.
Fact = str | tuple[str, ...]


def fact_label(fact: Fact) -> str:
    """How a report names `fact`: "-t", or "-t or --table"."""
    return fact if isinstance(fact, str) else " or ".join(fact)


def fact_present(fact: Fact, answer: str) -> bool:
    """Whether `answer` states `fact` (any one of its alternatives): case- and
    whitespace-insensitive; numbers and options whole.

    "10" is found in "retries 10 times" but not in "100" or "10.5", so a number at either end
    of the fact must not continue into more digits in the answer. An option is a whole token:
    "-subj" is not in "-subject", nor "-t" in "--table" (the golden line lists both forms when
    both are right). A dash between a letter and a digit may be there or not, in the fact or the
    answer: "SHA1" is "SHA-1", "AES-256-CBC" is "AES256-CBC".
    """
    if not isinstance(fact, str):
        return any(fact_present(alternative, answer) for alternative in fact)
    wanted = normalize(fact)
    if not wanted:
        return False
    if wanted[0] == "-":
        before = r"(?<![\w-])"
    elif wanted[0].isdigit():
        before = r"(?<![\d])(?<!\d[.,])"
    else:
        before = ""
    if wanted[0] == "-" and (wanted[-1].isalnum() or wanted[-1] == "_"):
        after = r"(?![\w-])(?![.,]\d)"  # -1 is not in -10 or -1.5
    elif wanted[-1].isdigit():
        after = r"(?![\d])(?![.,]\d)"
    else:
        after = ""
    # Letters and digits are never escaped, so a boundary between them survives `re.escape`.
    body = _LETTER_DIGIT.sub("-?", re.escape(_LETTER_DIGIT_DASH.sub("", wanted)))
    return re.search(before + body + after, normalize(answer)) is not None


_LETTER_DIGIT_DASH = re.compile(r"(?<=[a-z])-(?=\d)|(?<=\d)-(?=[a-z])")  # SHA-1, 3-des
_LETTER_DIGIT = re.compile(r"(?<=[a-z])(?=\d)|(?<=\d)(?=[a-z])")  # SHA1


def facts_accuracy(facts: Sequence[Fact], answer: str) -> bool:
    """True when every fact is present (a question with no facts counts as correct)."""
    return all(fact_present(fact, answer) for fact in facts)


def source_matches(source_path: str, expected: str) -> bool:
    """Whether a stored document path is the golden set's file name (or path suffix)."""
    path, name = source_path.replace("\\", "/"), expected.replace("\\", "/").lstrip("./")
    return path == name or path.endswith("/" + name)


def _is_expected(source_path: str, expected: Iterable[str]) -> bool:
    return any(source_matches(source_path, name) for name in expected)


def recall_at_k(ranked_sources: Sequence[str], expected: Sequence[str], k: int) -> float:
    """1.0 when a chunk from any expected source is among the top `k` results, else 0.0.

    A golden item lists every file that holds its answer, so finding one of them is enough;
    averaged over questions this is the share of questions whose answer was retrieved.
    """
    return 1.0 if any(_is_expected(path, expected) for path in ranked_sources[:k]) else 0.0


def reciprocal_rank(ranked_sources: Sequence[str], expected: Sequence[str], k: int = 10) -> float:
    """1 / rank of the first result from an expected source within the top `k`, else 0."""
    for rank, path in enumerate(ranked_sources[:k], 1):
        if _is_expected(path, expected):
            return 1.0 / rank
    return 0.0


def refusal_scores(outcomes: Iterable[tuple[bool, bool]]) -> dict:
    """Refusal precision and recall, and the false-refusal rate.

    Each outcome is (answerable, refused). A refusal is right when the question is not
    answerable from the docs: precision is the share of refusals that were right, recall the
    share of unanswerable questions that were refused, and the false-refusal rate the share of
    answerable questions that were refused. A rate with nothing to count is None.
    """
    outcomes = list(outcomes)
    refused_right = sum(1 for answerable, refused in outcomes if refused and not answerable)
    refused = sum(1 for _, refused in outcomes if refused)
    unanswerable = sum(1 for answerable, _ in outcomes if not answerable)
    answerable = len(outcomes) - unanswerable
    refused_wrong = refused - refused_right
    return {
        "precision": refused_right / refused if refused else None,
        "recall": refused_right / unanswerable if unanswerable else None,
        "false_refusal_rate": refused_wrong / answerable if answerable else None,
        "refused": refused,
        "unanswerable": unanswerable,
        "answerable": answerable,
    }


def percentile(values: Sequence[float], p: float) -> float | None:
    """The p-th percentile (0-100) by linear interpolation, or None for no values."""
    data = sorted(v for v in values if v is not None)
    if not data:
        return None
    position = (len(data) - 1) * p / 100
    low, high = math.floor(position), math.ceil(position)
    return data[low] + (data[high] - data[low]) * (position - low)


def mean(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are not None, or None."""
    data = [v for v in values if v is not None]
    return sum(data) / len(data) if data else None
