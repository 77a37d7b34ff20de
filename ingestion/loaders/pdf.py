"""PDF: the text layer of each page, through PDFium (pypdfium2).

PDFium was chosen by measurement on a real manual (docs/ingestion.md, "PDF files"): the same
words as pypdf and pdfminer.six, about 13 times faster than pypdf. Pages stay apart so every
chunk knows its page, and a source can link to `#page=N`.
"""

from __future__ import annotations

import pypdfium2 as pdfium

from ingestion.loaders.errors import LoadError
from ingestion.loaders.markdown_output import MARKDOWN_LOOKALIKE

# PDFium marks where a word was hyphenated at a line end; the word itself is whole around it.
_SOFT_HYPHEN_MARK = "\ufffe"


def convert(data: bytes) -> tuple[str | None, list[str]]:
    """(title from the PDF's metadata or None, the text of each page); LoadError if unreadable."""
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise LoadError(
                "encrypted PDF: it needs a password to open; ingest a copy without one"
            ) from exc
        raise LoadError(f"corrupt or unreadable PDF: {exc}") from exc
    try:
        title = (document.get_metadata_dict().get("Title") or "").strip() or None
        pages = [_page_text(document[i]) for i in range(len(document))]
    except pdfium.PdfiumError as exc:
        raise LoadError(f"corrupt or unreadable PDF: {exc}") from exc
    finally:
        document.close()
    if pages and not any(page.strip() for page in pages):
        raise LoadError(
            f"no text layer in any of its {len(pages)} page(s): a scanned PDF? "
            "Run it through OCR first"
        )
    return title, pages


def _page_text(page) -> str:
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
    finally:
        textpage.close()
        page.close()
    text = text.replace(_SOFT_HYPHEN_MARK, "")
    # A line of the PDF that starts like a Markdown heading or fence must stay prose.
    return "\n".join(
        "\\" + line if MARKDOWN_LOOKALIKE.match(line) else line for line in text.splitlines()
    )
