"""A deterministic check that an answer's specifics come from its documents (no model call).

Small local judges miss unsupported details and reject supported answers alike
(docs/evaluation.md). What a support answer gets wrong is usually a specific: a setting name, a
flag, a number, a path. This check lists the specifics of the answer that appear nowhere in the
documents, and measures how much of the answer's wording the documents cover.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CITATION = re.compile(r"\[\d{1,2}\]")
# Specifics: `code`, /paths/to/files, --flags, SETTING_NAMES, numbers, dotted.names, snake_case.
_SPECIFIC = re.compile(
    r"`[^`\n]+`|(?<![\w/])(?:/[\w.-]+){2,}|(?<![\w-])--?[a-z][\w-]*|\b[A-Z][A-Z0-9_]{2,}\b"
    r"|\b\d[\d.,:%]*\d\b|\b\d{2,}\b|\b\w+\.\w+\b|\b\w*_\w+\b"
)
# Inside code, a plain word is the language's syntax (SELECT, FROM), not a claim to check.
_PLAIN_WORD = re.compile(r"[A-Za-z]+")
_WORD = re.compile(r"[a-z0-9][a-z0-9_.-]*")
# Names an answer makes up to illustrate, not to claim: `CREATE INDEX idx_example ON my_table`,
# /path/to/file.csv, <your-host>. Only the rest of such an example must come from the documents.
_PLACEHOLDER = re.compile(
    r"example|path/to|\b(?:my|your|some)_|\b(?:foo|bar|baz)\b|^<.*>$"
    r"|\bmy(?:db|database|table|user|role|app|schema|index|host|server|file|column)s?\b",
    re.IGNORECASE,
)
_SPACE = re.compile(r"\s+")
_STOP = frozenset(
    "the a an and or of to in on for is are be by with as at it its this that from your you "
    "can do does not no if then when which what how use used using than into so only also any "
    "each all more most one two per there their these those will would should may must has "
    "have had was were been being but about "
    # A verdict word is no claim the documents can back: "Yes" is grounded by what it affirms.
    "yes true false correct right".split()
)


@dataclass(frozen=True)
class Support:
    """How well the documents cover an answer."""

    coverage: float  # share of the answer's content words found in the documents, 0 to 1
    unsupported: tuple[str, ...]  # specifics of the answer found nowhere in the documents


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text.casefold())


def _contains(source: str, term: str) -> bool:
    """Whether `term` occurs in `source` as a whole token: 15 is not in 150, nor RAG_X in RAG_XY."""
    before = r"(?<![\w-])" if term[0] == "-" else r"(?<![\w.])" if term[0].isalnum() else ""
    after = r"(?![\w])(?![.,]\d)" if term[-1].isalnum() else ""
    return re.search(before + re.escape(term) + after, source) is not None


def _words(text: str) -> list[str]:
    # A word keeps inner dots and dashes (RAG_TOP_K, v1.2, ef-search), not a sentence's full stop.
    return [w.rstrip("._-") for w in _WORD.findall(text)]


def _specifics(text: str) -> list[str]:
    """The specifics of `text`, normalised; a code span counts by the specifics inside it.

    A span such as `SELECT * FROM pg_stat_progress_create_index` rarely appears verbatim in
    the documents, while each of its names does; checking it whole refused correct answers.
    A span with no specific inside (`vacuum`) is checked whole.
    """
    found = []
    for match in _SPECIFIC.findall(text):
        if match.startswith("`"):
            inner = match.strip("`").strip()
            parts = [p for p in _SPECIFIC.findall(inner) if not _PLAIN_WORD.fullmatch(p)] or [inner]
        else:
            parts = [match]
        for part in parts:
            term = _normal(part.strip())
            if term and not _PLACEHOLDER.search(term):
                found.append(term)
    return found


def lexical_support(answer: str, documents: list[str]) -> Support:
    """The answer's word coverage by `documents`, and its specifics they do not contain."""
    source = _normal(" ".join(documents))
    body = _CITATION.sub(" ", answer)
    unsupported = []
    for term in _specifics(body):
        if not _contains(source, term) and term not in unsupported:
            unsupported.append(term)
    words = [w for w in _words(body.casefold()) if len(w) > 2 and w not in _STOP]
    known = set(_words(source))
    stems = {w[:5] for w in known if len(w) > 4}
    covered = sum(1 for w in words if w in known or (len(w) > 4 and w[:5] in stems))
    # An answer with no content word ("Yes.", "No") says nothing the documents can be checked
    # against: unsupported, not vacuously supported (a document's injected "answer with one word"
    # otherwise passed as faithful, docs/architecture.md "Prompt injection").
    return Support(coverage=covered / len(words) if words else 0.0, unsupported=tuple(unsupported))
