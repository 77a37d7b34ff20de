"""PDF and Word files through `manage.py ingest_docs`: pages, headings, bad files, updates."""

import zipfile

import pytest

from ingestion.loaders import LoadError, load_document
from ragapp.models import Chunk, Document
from tests.ingestion.commands import ingest, ingest_failing
from tests.ingestion.documents import pdf_bytes, write_docx, write_encrypted_pdf, write_pdf

pytestmark = pytest.mark.django_db


MANUAL = [
    ["Installing the widget", "Run the installer as an administrator."],
    [],  # a blank page, as manuals have between chapters
    ["Calibrating the widget", "Hold the reset button for ten seconds to calibrate."],
]


def test_every_pdf_chunk_knows_its_page_and_links_to_it(tmp_path):
    write_pdf(tmp_path / "manual.pdf", MANUAL, title="Widget manual")
    ingest(str(tmp_path), "--base-url", "https://docs.example.com/manuals/")
    document = Document.objects.get()
    assert (document.format, document.title) == ("pdf", "Widget manual")
    chunks = list(Chunk.objects.filter(document=document).order_by("ordinal"))
    assert [c.metadata["page"] for c in chunks] == [1, 3]
    assert "ten seconds" in chunks[1].text and "installer" not in chunks[1].text
    assert chunks[1].public_url == "https://docs.example.com/manuals/manual.pdf#page=3"


def test_docx_heading_styles_become_the_heading_path(tmp_path):
    write_docx(
        tmp_path / "guide.docx",
        [
            ("Title", "Widget guide"),
            ("Heading 1", "Install"),
            ("", "Run setup.exe and follow the steps."),
            ("Heading 2", "On Linux"),
            ("List Bullet", "apt install widget"),
            ("table", "Setting|Default\nport|8080"),
        ],
    )
    ingest(str(tmp_path), "--base-url", "https://docs.example.com/")
    chunks = {c.heading_path: c for c in Chunk.objects.all()}
    assert set(chunks) == {"Widget guide > Install", "Widget guide > Install > On Linux"}
    linux = chunks["Widget guide > Install > On Linux"]
    assert "- apt install widget" in linux.text and "port | 8080" in linux.text
    assert linux.public_url == "https://docs.example.com/guide.docx#on-linux"
    assert Document.objects.get().format == "docx"


def test_bad_files_each_get_a_clear_line_and_the_ingest_goes_on(tmp_path, settings):
    good = write_pdf(tmp_path / "good.pdf", MANUAL)
    write_encrypted_pdf(tmp_path / "locked.pdf", good)
    write_pdf(tmp_path / "scanned.pdf", [[], []])  # pages without a text layer
    (tmp_path / "broken.docx").write_bytes(b"PK\x03\x04 this is not a whole zip archive")
    fine = write_docx(tmp_path / "fine.docx", [("Heading 1", "Fine"), ("", "A fine document.")])
    settings.RAG_MAX_FILE_BYTES = fine.stat().st_size  # a Word file is some 36 KB of template
    (tmp_path / "huge.pdf").write_bytes(pdf_bytes([["x" * 80] * 40] * 20))
    assert (tmp_path / "huge.pdf").stat().st_size > settings.RAG_MAX_FILE_BYTES

    output, error = ingest_failing(str(tmp_path))

    lines = {line.split(": ", 1)[0].split("/")[-1]: line for line in output.splitlines()}
    assert "encrypted PDF: it needs a password" in lines["locked.pdf"]
    assert "no text layer in any of its 2 page(s): a scanned PDF?" in lines["scanned.pdf"]
    assert "corrupt DOCX (not a readable Word archive)" in lines["broken.docx"]
    assert "file is too large" in lines["huge.pdf"]
    assert all(lines[name].strip().startswith("failed") for name in ("locked.pdf", "huge.pdf"))
    assert "2 new, 0 updated, 0 unchanged, 0 skipped, 4 failed" in output
    assert error == "4 file(s) failed; see above."
    assert sorted(Document.objects.values_list("format", flat=True)) == ["docx", "pdf"]


def test_a_corrupt_pdf_is_refused_by_the_loader(tmp_path):
    path = tmp_path / "cut.pdf"
    path.write_bytes(pdf_bytes([["Some text"]])[:120])
    with pytest.raises(LoadError, match="corrupt or unreadable PDF"):
        load_document(path, max_bytes=10_000)


def test_a_docx_that_is_a_zip_of_something_else_is_refused(tmp_path):
    path = tmp_path / "notes.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "not a Word document")
    with pytest.raises(LoadError, match="corrupt DOCX"):
        load_document(path, max_bytes=100_000)


def test_incremental_reingest_and_prune_work_for_pdf_and_docx(tmp_path, fake_embeddings):
    pdf = write_pdf(tmp_path / "manual.pdf", MANUAL)
    word = write_docx(tmp_path / "guide.docx", [("Heading 1", "Guide"), ("", "Version one.")])
    assert "2 new, 0 updated, 0 unchanged" in ingest(str(tmp_path))

    calls = len(fake_embeddings.calls)
    assert "0 new, 0 updated, 2 unchanged" in ingest(str(tmp_path))
    assert len(fake_embeddings.calls) == calls  # nothing was embedded again

    # The same text on other pages changes where the links point: that is a change.
    write_pdf(pdf, [MANUAL[0], MANUAL[2]])
    assert "0 new, 1 updated, 1 unchanged" in ingest(str(tmp_path))
    assert sorted(
        Chunk.objects.filter(document__format="pdf").values_list("metadata__page", flat=True)
    ) == [1, 2]

    word.unlink()
    output = ingest("--prune", str(tmp_path))
    assert "1 unchanged, 0 skipped, 0 failed, 1 pruned" in output
    assert list(Document.objects.values_list("format", flat=True)) == ["pdf"]
