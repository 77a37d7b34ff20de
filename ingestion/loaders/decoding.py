"""Bytes to text: the encoding (BOM, UTF-8, or a legacy fallback), binary refused, then cleaned up.

Cleaning up means one Unicode form (NFKC, no invisible characters), one kind of line ending, no
control characters and no trailing spaces, so the converters and the chunker never see the
differences between editors and platforms.
"""

import codecs
import re

from ingestion.loaders.errors import LoadError
from ragapp.graph.text_safety import normalise_unicode

# A NUL byte this early means a binary file, not a text file with one stray byte.
_SNIFF_BYTES = 8192

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
TRAILING_SPACE = re.compile(r"[^\S\n]+$", re.MULTILINE)


def decode(data: bytes) -> tuple[str, list[str]]:
    """The text in *data* and warnings about how it was decoded; LoadError if it is not text."""
    # UTF-16 is full of NUL bytes, so it must be recognised (by its BOM) before the binary check.
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16"), []
        except UnicodeDecodeError as exc:
            raise LoadError(f"invalid UTF-16 text: {exc.reason}") from exc
    if b"\0" in data[:_SNIFF_BYTES]:
        raise LoadError("looks binary (a NUL byte in the first 8 KB), not text")
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError as exc:
        bad = exc.start
    # cp1252 is what most non-UTF-8 docs really are; latin-1 accepts any byte, so it never fails.
    try:
        text, encoding = data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        text, encoding = data.decode("latin-1"), "latin-1"
    return text, [f"not valid UTF-8 (first bad byte at offset {bad}); decoded as {encoding}"]


def normalise(text: str) -> str:
    """*text* with "\\n" line endings only, no control characters and no trailing spaces.

    First NFKC without invisible characters: the same normalisation prompts apply to any text they
    quote, done once here so that stored chunks are what the models read (`text_safety`).
    """
    text = normalise_unicode(text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\u2028", "\n").replace("\u2029", "\n")
    return TRAILING_SPACE.sub("", _CONTROL.sub("", text))
