"""load_document: one file through detection, reading, decoding and its format's converter."""

import re
from dataclasses import dataclass
from pathlib import Path

from ingestion.loaders import asciidoc, docx, html, markdown, mdx, pdf, plain_text, rst
from ingestion.loaders.decoding import TRAILING_SPACE, decode, normalise
from ingestion.loaders.detection import BINARY_FORMATS, detect_format, without_gz
from ingestion.loaders.errors import EmptyDocumentError, LoadError
from ingestion.loaders.reading import read_bytes

# Each takes normalised text and returns (title or None, Markdown-like text).
_CONVERTERS = {
    "markdown": markdown.convert,
    "mdx": mdx.convert,
    "rst": rst.convert,
    "asciidoc": asciidoc.convert,
    "html": html.convert,
    "text": plain_text.convert,
}
# Where a page declares its own published address, which wins over the ingest root's base URL.
_OWN_URL = {
    "markdown": markdown.front_matter_url,
    "mdx": markdown.front_matter_url,
    "html": html.canonical_url,
}


@dataclass(frozen=True)
class LoadedDocument:
    path: Path
    title: str
    format: str  # "markdown" | "mdx" | "rst" | "asciidoc" | "html" | "text" | "pdf" | "docx"
    text: str
    warnings: tuple[str, ...] = ()
    url: str = ""  # the page's own URL: front matter `url:` or <link rel="canonical">
    # A PDF's text page by page (1-based in order), so each chunk can name its page.
    pages: tuple[str, ...] = ()


def load_document(path: Path, *, max_bytes: int) -> LoadedDocument:
    """Read, decode and normalise one documentation file; raise LoadError if it cannot be used."""
    path = Path(path)
    fmt = detect_format(path)
    if fmt is None:
        raise LoadError(f"unsupported file type {path.name!r}")
    data = read_bytes(path, max_bytes)
    if fmt in BINARY_FORMATS:
        return _load_binary(path, fmt, data)
    text, warnings = decode(data)
    text = normalise(text)
    if not text.strip():
        raise EmptyDocumentError("empty file")
    own_url = _OWN_URL[fmt](text) if fmt in _OWN_URL else ""
    title, text = _CONVERTERS[fmt](text)
    text = _tidy(text)
    if not text.strip():
        raise EmptyDocumentError(f"empty file (no text left after reading it as {fmt})")
    return LoadedDocument(
        path=path,
        title=title or _humanise(path),
        format=fmt,
        text=text + "\n",
        warnings=tuple(warnings),
        url=own_url,
    )


def _load_binary(path: Path, fmt: str, data: bytes) -> LoadedDocument:
    if not data:
        raise EmptyDocumentError("empty file")
    if fmt == "pdf":
        title, raw_pages = pdf.convert(data)
        pages = tuple(_tidy(normalise(page)) for page in raw_pages)
        # The hash covers where pages break too: text moved to another page changes its links.
        text = "".join(f"\n\n[page {n}]\n\n{page}" for n, page in enumerate(pages, 1)).strip()
    else:
        title, text = docx.convert(data)
        text, pages = _tidy(normalise(text)), ()
    if not (any(page.strip() for page in pages) if fmt == "pdf" else text.strip()):
        raise EmptyDocumentError(f"empty file (no text left after reading it as {fmt})")
    return LoadedDocument(
        path=path, title=title or _humanise(path), format=fmt, text=text + "\n", pages=pages
    )


def _tidy(text: str) -> str:
    return TRAILING_SPACE.sub("", text).strip("\n")


def _humanise(path: Path) -> str:
    # The title of a file whose content has none: "getting_started.md.gz" -> "Getting started".
    stem = Path(without_gz(path.name)).stem
    words = " ".join(re.split(r"[\s_-]+", stem)).strip()
    return words[:1].upper() + words[1:] if words else path.name
