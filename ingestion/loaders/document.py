"""load_document: one file through detection, reading, decoding and its format's converter."""

import re
from dataclasses import dataclass
from pathlib import Path

from ingestion.loaders import html, markdown, plain_text, rst
from ingestion.loaders.decoding import TRAILING_SPACE, decode, normalise
from ingestion.loaders.detection import detect_format, without_gz
from ingestion.loaders.errors import EmptyDocumentError, LoadError
from ingestion.loaders.reading import read_bytes

# Each takes normalised text and returns (title or None, Markdown-like text).
_CONVERTERS = {
    "markdown": markdown.convert,
    "rst": rst.convert,
    "html": html.convert,
    "text": plain_text.convert,
}


@dataclass(frozen=True)
class LoadedDocument:
    path: Path
    title: str
    format: str  # "markdown" | "rst" | "html" | "text"
    text: str
    warnings: tuple[str, ...] = ()


def load_document(path: Path, *, max_bytes: int) -> LoadedDocument:
    """Read, decode and normalise one documentation file; raise LoadError if it cannot be used."""
    path = Path(path)
    fmt = detect_format(path)
    if fmt is None:
        raise LoadError(f"unsupported file type {path.name!r}")
    text, warnings = decode(read_bytes(path, max_bytes))
    text = normalise(text)
    if not text.strip():
        raise EmptyDocumentError("empty file")
    title, text = _CONVERTERS[fmt](text)
    text = TRAILING_SPACE.sub("", text).strip("\n")
    if not text.strip():
        raise EmptyDocumentError(f"empty file (no text left after reading it as {fmt})")
    return LoadedDocument(
        path=path,
        title=title or _humanise(path),
        format=fmt,
        text=text + "\n",
        warnings=tuple(warnings),
    )


def _humanise(path: Path) -> str:
    # The title of a file whose content has none: "getting_started.md.gz" -> "Getting started".
    stem = Path(without_gz(path.name)).stem
    words = " ".join(re.split(r"[\s_-]+", stem)).strip()
    return words[:1].upper() + words[1:] if words else path.name
