"""Untrusted text made plain, and tag names found however they are disguised.

Two modules use this one, so that a document is cleaned up the same way wherever it enters:

- ingestion normalises every document as it loads it (`ingestion/loaders/decoding.py`);
- `prompts.defuse` normalises every piece of outside text again before it quotes it (a question,
  a draft answer or a chunk stored before this existed never went through ingestion), and then
  finds our delimiters in it with `tag_openers`.

Normalising (`normalise_unicode`) is NFKC with the invisible characters removed. NFKC turns the
compatibility forms a tokenizer may read as plain ASCII (full-width letters and "<", mathematical
bold letters, ligatures) into that ASCII. Removing zero-width characters and soft hyphens means no
text can hide a word from a check (or from a reviewer) by splitting it with something that renders
as nothing.

NFKC does not touch letters of other scripts that look Latin (Cyrillic small o is not "o"), and an
attacker is not limited to the invisible characters we remove, so matching does not rely on the
text being normalised. It reads the text the way a person (or a model) sees it: a skeleton in the
spirit of Unicode's confusable detection (UTS #39), made for matching only and never shown:
decompose, drop every mark and every format character, fold case, map look-alike letters to the
Latin letter they pass for. A tag name is then found in the skeleton with any punctuation or
spaces between its letters. That over-matches on purpose: a false match only costs one "<"
shown as "&lt;", which reads the same; a missed one lets a document close its own tag.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import cache, lru_cache

# Removed from all text: they render as nothing, so they can only hide something. Zero-width
# space, non-joiner and joiner, word joiner, zero-width no-break space (a BOM inside text), soft
# hyphen; and the Unicode tag characters, which encode invisible ASCII that some tokenizers read
# ("ASCII smuggling"). The cost: a zero-width joiner inside an emoji sequence or a Persian word.
_INVISIBLE = dict.fromkeys(
    [0x00AD, 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, *range(0xE0000, 0xE0080)]
)

# What a reader does not see in a skeleton: combining and enclosing marks, format characters
# (the invisibles above and every other one, such as U+2062 or the bidirectional controls).
_UNSEEN_CATEGORIES = frozenset({"Mn", "Me", "Cf"})
# Letters that render as blanks, which the categories above do not catch.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164")

# Letters (after case folding) that pass for a Latin letter of a tag name, and characters that
# pass for "<". From Unicode's confusables.txt: Cyrillic, Greek, Armenian, Coptic and Latin small
# capitals, the scripts whose letters most often pass for Latin. Only the letters of our tag names
# are listed; a new tag name may need more. Capitals are covered by folding case first (Greek
# capital Epsilon folds to epsilon, listed under "e").
_LOOKALIKES = {
    "a": "\u0430\u0251\u03b1\u237a",  # Cyrillic a, Latin alpha, Greek alpha, APL alpha
    "c": "\u0441\u03f2\u1d04\u2ca5",  # Cyrillic es, Greek lunate sigma, small capital, Coptic sima
    "d": "\u0501",  # Cyrillic komi de
    "e": "\u0435\u04bd\u03b5",  # Cyrillic ie, Abkhasian che, Greek epsilon (for capital Epsilon)
    "m": "\u043c\u03bc",  # Cyrillic em, Greek mu (for their capitals)
    "n": "\u03bd\u043f\u0578",  # Greek nu (for capital Nu), Cyrillic pe, Armenian vo
    # Cyrillic o, Greek omicron and sigma, Armenian oh, small capital o, Coptic o
    "o": "\u043e\u03bf\u03c3\u0585\u1d0f\u2c9f",
    "r": "\u0433\u1d26\u2c85",  # Cyrillic ghe, Greek small capital gamma, Coptic gamma
    "s": "\u0455\u01bd\ua731",  # Cyrillic dze, Latin tone five, small capital s
    "t": "\u0442\u03c4",  # Cyrillic te, Greek tau (for their capitals)
    "u": "\u03c5\u057d\u1d1c\u028b",  # Greek upsilon, Armenian seh, small capital, v with hook
    # Cyrillic we and omega, Greek omega, small capital w, turned m
    "w": "\u051d\u0461\u03c9\u1d21\u026f",
    # Single angle quotation mark, modifier arrowhead, Canadian pa, CJK, mathematical and
    # ornamental angle brackets, Runic kauna.
    "<": "\u2039\u02c2\u1438\u3008\u27e8\u276c\u276e\u16b2",
}
_AS_LATIN = {lookalike: latin for latin, chars in _LOOKALIKES.items() for lookalike in chars}

# Between the letters of a tag name, and between "<" and the name: anything that is not a letter
# or a digit (spaces, "/", "-", "_", punctuation that may pass for "/").
_GAP = r"[\W_]*"


def normalise_unicode(text: str) -> str:
    """`text` in NFKC, without zero-width characters, soft hyphens or Unicode tag characters.

    The invisibles go first, so that NFKC composes what they separated; the result contains none
    of them, so calling this again changes nothing.
    """
    return unicodedata.normalize("NFKC", text.translate(_INVISIBLE))


def tag_openers(text: str, names: Iterable[str]) -> list[int]:
    """Indexes in `text` of every "<" (or look-alike) that opens or closes a tag in `names`.

    A "<" counts when only non-letters (spaces, "/", punctuation, marks, invisible characters)
    stand between it and one of `names`, spelt in any case, with look-alike letters and with
    non-letters between its letters, and not followed by a letter or digit ("<documentation>"
    is not "<document>").
    """
    skeleton, origins = _skeleton(text)
    found: set[int] = set()
    for name in _names_pattern(tuple(names)).finditer(skeleton):
        found.update(origins[i] for i in _openers_before(skeleton, name.start()))
    return sorted(found)


def _openers_before(skeleton: str, start: int) -> list[int]:
    """The "<"s in the run of non-letters just before `start`: the ones that can open a tag."""
    openers = []
    index = start - 1
    while index >= 0 and not skeleton[index].isalnum():
        if skeleton[index] == "<":
            openers.append(index)
        index -= 1
    return openers


@cache
def _names_pattern(names: tuple[str, ...]) -> re.Pattern:
    # Longest first, so "documents" is tried before "document".
    spellings = (_GAP.join(map(re.escape, name)) for name in sorted(names, key=len, reverse=True))
    return re.compile(f"(?:{'|'.join(spellings)})(?![^\\W_])")


def _skeleton(text: str) -> tuple[str, list[int]]:
    """The text as a reader sees it, and for each of its characters the index it came from."""
    if text.isascii():  # nothing to fold but case, one character for one
        return text.lower(), list(range(len(text)))
    characters: list[str] = []
    origins: list[int] = []
    for index, char in enumerate(text):
        seen = _as_seen(char)
        characters.append(seen)
        origins.extend([index] * len(seen))
    return "".join(characters), origins


@lru_cache(maxsize=4096)
def _as_seen(char: str) -> str:
    """What a reader sees in `char`: Latin for a look-alike, base letters, no marks, lower case."""
    folded = char.casefold()
    if folded in _AS_LATIN:  # before decomposing: lunate sigma would become final sigma
        return _AS_LATIN[folded]
    visible = "".join(
        part
        for part in unicodedata.normalize("NFKD", folded)
        if unicodedata.category(part) not in _UNSEEN_CATEGORIES and part not in _BLANK_LETTERS
    )
    return "".join(_AS_LATIN.get(part, part) for part in visible.casefold())
