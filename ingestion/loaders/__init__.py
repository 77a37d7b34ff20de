"""Turn documentation files into normalised, Markdown-like text for the chunker.

Every format ends up as Markdown-ish text whose headings are ATX ``#`` lines and whose code
is in fenced blocks, so one chunker can split all of them along their structure.

The package is laid out along the way a file travels:

- ``detection``: which format a file is, from its suffix (a trailing ``.gz`` allowed);
- ``reading``: its bytes, gunzipped and held to the size limit;
- ``decoding``: those bytes as text (BOMs, UTF-8 or a legacy fallback, binary refused), with
  line endings and control characters normalised;
- ``markdown``, ``mdx``, ``rst``, ``asciidoc``, ``html``, ``plain_text``: one converter per
  format, each returning
  ``(title or None, text)``; ``markdown_output`` holds what they share to write that text;
- ``pdf``, ``docx``: the binary formats, read from bytes by their libraries (PDFium,
  python-docx); a PDF keeps its pages apart so every chunk knows its page;
- ``document``: ``load_document``, which runs those steps for one file.

Callers import from here; the modules behind it are free to change.
"""

from ingestion.loaders.detection import SUPPORTED_SUFFIXES, detect_format
from ingestion.loaders.document import LoadedDocument, load_document
from ingestion.loaders.errors import EmptyDocumentError, LoadError

__all__ = [
    "SUPPORTED_SUFFIXES",
    "EmptyDocumentError",
    "LoadError",
    "LoadedDocument",
    "detect_format",
    "load_document",
]
