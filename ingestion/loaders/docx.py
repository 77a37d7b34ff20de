"""Word (DOCX): paragraphs and tables in order; heading styles become the heading path.

"Title" and "Heading 1" to "Heading 9" are Word's built-in style names (python-docx reports the
English name whatever the user's language), so they are what a document's outline is made of.
"""

from __future__ import annotations

import io
import re
import zipfile

import docx
from docx.opc.exceptions import PackageNotFoundError
from docx.table import Table

from ingestion.loaders.errors import LoadError
from ingestion.loaders.markdown_output import MARKDOWN_LOOKALIKE

_HEADING_STYLE = re.compile(r"^Heading (\d)$")


def convert(data: bytes) -> tuple[str | None, str]:
    """(title, Markdown-like text); LoadError if the file is not a readable Word document."""
    try:
        document = docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, PackageNotFoundError, KeyError, ValueError) as exc:
        raise LoadError(f"corrupt DOCX (not a readable Word archive): {exc}") from exc
    title = (document.core_properties.title or "").strip() or None
    lines: list[str] = []
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            lines.extend(_table(block))
            continue
        text = " ".join(block.text.split())
        if not text:
            continue
        style = block.style.name if block.style is not None else ""
        if style == "Title":
            title = title or text
            lines.append(f"# {text}")
        elif m := _HEADING_STYLE.match(style):
            lines.append("#" * min(int(m.group(1)), 6) + " " + text)
        elif style.startswith("List"):
            lines.append(f"- {text}")
        else:
            lines.append("\\" + text if MARKDOWN_LOOKALIKE.match(text) else text)
        lines.append("")
    return title, "\n".join(lines)


def _table(table: Table) -> list[str]:
    rows = [" | ".join(" ".join(cell.text.split()) for cell in row.cells) for row in table.rows]
    return [*(row for row in rows if row.strip(" |")), ""]
