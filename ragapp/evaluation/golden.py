"""Golden sets: one JSON object per line, each a question with what a right answer holds."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

REQUIRED = {
    "id": str,
    "question": str,
    "answerable": bool,
    "sources": list,
    "facts": list,
}


class GoldenFileError(ValueError):
    """The golden file cannot be used; the message lists every bad line."""


@dataclass(frozen=True)
class GoldenItem:
    """One question of a golden set."""

    id: str
    question: str
    answerable: bool
    sources: tuple[str, ...] = ()
    facts: tuple[str | tuple[str, ...], ...] = ()  # a tuple is one fact's alternatives
    section: str = ""
    line: int = 0
    extra: dict = field(default_factory=dict, compare=False)


def _problems(data: object) -> list[str]:
    if not isinstance(data, dict):
        return ["not a JSON object"]
    problems = []
    for key, kind in REQUIRED.items():
        if key not in data:
            problems.append(f"missing {key!r}")
        elif not isinstance(data[key], kind):
            problems.append(f"{key!r} must be {kind.__name__}, not {type(data[key]).__name__}")
    if problems:
        return problems
    if not all(isinstance(v, str) and v.strip() for v in data["sources"]):
        problems.append("'sources' must hold non-empty strings")
    if not all(_is_fact(v) for v in data["facts"]):
        problems.append(
            "'facts' must hold non-empty strings, or lists of two or more of them (alternatives)"
        )
    if not data["question"].strip():
        problems.append("'question' is empty")
    if not data["id"].strip():
        problems.append("'id' is empty")
    if data["answerable"] and not data["sources"]:
        problems.append("an answerable question needs at least one source")
    if not data["answerable"] and (data["sources"] or data["facts"]):
        problems.append("an unanswerable question has no sources and no facts")
    if "section" in data and not isinstance(data["section"], str):
        problems.append("'section' must be str")
    if data.get("todo"):
        # `export_golden` marks what only a person can write; scoring without it would mislead.
        problems.append(f"unfinished: {data['todo']} (then delete its 'todo' key)")
    return problems


def _is_fact(value: object) -> bool:
    if isinstance(value, list):
        return len(value) > 1 and all(isinstance(v, str) and v.strip() for v in value)
    return isinstance(value, str) and bool(value.strip())


def load_golden(path: Path) -> list[GoldenItem]:
    """The items of `path`, or GoldenFileError naming each bad line (blank lines are skipped)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldenFileError(f"Cannot read {path}: {exc}") from None
    items, errors, seen = [], [], {}
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            errors.append(f"line {number}: not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        problems = _problems(data)
        if not problems and data["id"] in seen:
            problems = [f"id {data['id']!r} repeats line {seen[data['id']]}"]
        if problems:
            errors.append(f"line {number}: " + "; ".join(problems))
            continue
        seen[data["id"]] = number
        items.append(
            GoldenItem(
                id=data["id"],
                question=data["question"],
                answerable=data["answerable"],
                sources=tuple(data["sources"]),
                facts=tuple(f if isinstance(f, str) else tuple(f) for f in data["facts"]),
                section=data.get("section", ""),
                line=number,
                extra={k: v for k, v in data.items() if k not in REQUIRED and k != "section"},
            )
        )
    if errors:
        shown = "\n  ".join(errors[:50])
        more = f"\n  ... and {len(errors) - 50} more" if len(errors) > 50 else ""
        raise GoldenFileError(f"{path}: {len(errors)} bad line(s):\n  {shown}{more}")
    if not items:
        raise GoldenFileError(f"{path}: no questions in the file.")
    return items


def sample_items(items: list[GoldenItem], size: int) -> list[GoldenItem]:
    """`size` questions: every unanswerable one (up to `size`), then answerable ones spread
    evenly through the file, in file order.

    Refusal figures rest on the unanswerable questions, and a set has few of them: an even
    spread over the whole file measured refusal recall on 2 to 5 questions.
    """
    if size >= len(items):
        return list(items)
    unanswerable = [item for item in items if not item.answerable]
    answerable = [item for item in items if item.answerable]
    keep = unanswerable[: min(len(unanswerable), size)]
    room = size - len(keep)
    step = len(answerable) / room if room else 0
    keep += [answerable[int(i * step)] for i in range(room)]
    chosen = {id(item) for item in keep}
    return [item for item in items if id(item) in chosen]
