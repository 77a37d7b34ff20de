"""Which format a documentation file is in, decided by its suffix alone."""

from pathlib import Path

FORMAT_BY_SUFFIX = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "mdx",
    ".rst": "rst",
    ".adoc": "asciidoc",
    ".asciidoc": "asciidoc",
    ".html": "html",
    ".htm": "html",
    ".txt": "text",
    ".text": "text",
    ".pdf": "pdf",
    ".docx": "docx",
}

# Formats read from their bytes by their own library, not decoded as text first.
BINARY_FORMATS = frozenset({"pdf", "docx"})
# Each of these may also carry a trailing ".gz"; detect_format() handles that.
SUPPORTED_SUFFIXES = frozenset(FORMAT_BY_SUFFIX)


def detect_format(path: Path) -> str | None:
    """Return the format of *path* by suffix (a trailing .gz is allowed); None if unsupported."""
    name = without_gz(Path(path).name.lower())
    return FORMAT_BY_SUFFIX.get(Path(name).suffix) if name else None


def without_gz(name: str) -> str:
    """*name* without a trailing ".gz" (any case): "guide.md.gz" becomes "guide.md"."""
    return name[:-3] if name.lower().endswith(".gz") else name
