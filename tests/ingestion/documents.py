"""Build real PDF and Word files for the tests, so no binary fixture is checked in."""

from __future__ import annotations

from pathlib import Path

import docx
from pypdf import PdfReader, PdfWriter


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(pages: list[list[str]], *, title: str = "") -> bytes:
    """A valid PDF with one text line per string, each page in order; [] pages have no text."""
    objects: list[bytes] = []
    page_ids = [4 + 2 * n for n in range(len(pages))]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{i} 0 R" for i in page_ids)
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for n, lines in enumerate(pages):
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            ops += [f"({_escape(line)}) Tj", "T*"]
        ops.append("ET")
        stream = "\n".join(ops).encode() if lines else b""
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {page_ids[n] + 1} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    info = len(objects) + 1
    objects.append(f"<< /Title ({_escape(title)}) >>".encode())
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info {info} 0 R >>\n"
        f"startxref\n{xref}\n%%EOF\n"
    ).encode()
    return bytes(out)


def write_pdf(path: Path, pages: list[list[str]], *, title: str = "") -> Path:
    """Write `pdf_bytes(pages)` to `path`."""
    path.write_bytes(pdf_bytes(pages, title=title))
    return path


def write_encrypted_pdf(path: Path, source: Path, password: str = "s3cret") -> Path:
    """`source` encrypted with a user password, as a PDF tool would save it."""
    writer = PdfWriter(clone_from=PdfReader(source))
    writer.encrypt(
        user_password=password, owner_password=password, algorithm="RC4-128"
    )  # RC4 needs no crypto library
    with path.open("wb") as f:
        writer.write(f)
    return path


def write_docx(path: Path, blocks: list[tuple[str, str]], *, title: str = "") -> Path:
    """A Word file of (style, text) blocks; style "Heading N", "Title", "List Bullet" or ""."""
    document = docx.Document()
    if title:
        document.core_properties.title = title
    for style, text in blocks:
        if style.startswith("Heading "):
            document.add_heading(text, level=int(style.split()[1]))
        elif style == "Title":
            document.add_heading(text, level=0)
        elif style == "table":
            rows = [row.split("|") for row in text.split("\n")]
            table = document.add_table(rows=len(rows), cols=len(rows[0]))
            for r, row in enumerate(rows):
                for c, cell in enumerate(row):
                    table.cell(r, c).text = cell.strip()
        else:
            document.add_paragraph(text, style=style or None)
    document.save(path)
    return path
