"""`ingest_docs` never follows a symbolic link out of the directory it was given.

A link such as `notes.txt -> /app/.data/secret_key` inside a documentation tree would otherwise
put the secret into the knowledge base, where any signed-in user can read its chunks.
"""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from ragapp.models import Chunk, Document

pytestmark = pytest.mark.django_db

SECRET = "hunter2-do-not-publish"


def ingest(*args: str) -> str:
    out = StringIO()
    call_command("ingest_docs", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def summary(output: str) -> str:
    return [line for line in output.splitlines() if " new, " in line][-1]


def skip_line(output: str, path: Path) -> str:
    return next(line for line in output.splitlines() if line.startswith(f" skipped  {path}:"))


def secret_is_stored() -> bool:
    return Chunk.objects.filter(text__contains=SECRET).exists()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the documentation tree, holding what must never be ingested."""
    folder = tmp_path / "private"
    folder.mkdir()
    (folder / "secret_key.txt").write_text(f"{SECRET}\n")
    (folder / "notes.md").write_text(f"# Private notes\n\nThe key is {SECRET}.\n")
    return folder


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\nInstall the tool.\n")
    return folder


def test_a_file_link_to_outside_the_tree_is_skipped_and_reported(docs, outside):
    link = docs / "x.txt"
    link.symlink_to(outside / "secret_key.txt")
    output = ingest(str(docs))
    assert skip_line(output, link).endswith(
        f"symlink to {outside / 'secret_key.txt'}, outside the ingested directory {docs}"
    )
    assert summary(output).startswith("1 new, 0 updated, 0 unchanged, 1 skipped, 0 failed")
    assert not secret_is_stored()
    assert list(Document.objects.values_list("title", flat=True)) == ["Guide"]


def test_a_relative_link_climbing_out_of_the_tree_is_skipped(docs, outside):
    link = docs / "up.txt"
    link.symlink_to(Path("..") / outside.name / "secret_key.txt")
    output = ingest(str(docs))
    assert "outside the ingested directory" in skip_line(output, link)
    assert not secret_is_stored()


def test_a_directory_link_to_outside_the_tree_is_skipped_and_not_entered(docs, outside):
    link = docs / "private"
    link.symlink_to(outside, target_is_directory=True)
    output = ingest(str(docs))
    assert skip_line(output, link).endswith(
        f"symlink to {outside}, outside the ingested directory {docs}"
    )
    assert summary(output).startswith("1 new, 0 updated, 0 unchanged, 1 skipped, 0 failed")
    assert not secret_is_stored()
    assert not Document.objects.filter(source_path__contains="/private/").exists()


def test_links_that_stay_inside_the_tree_are_followed(docs):
    (docs / "real").mkdir()
    (docs / "real" / "page.md").write_text("# Page\n\nReached through a link.\n")
    (docs / "alias").symlink_to(docs / "real", target_is_directory=True)
    (docs / "latest.md").symlink_to("real/page.md")  # relative, and inside
    (docs / "same-guide.md").symlink_to(docs / "guide.md")
    output = ingest(str(docs))
    assert "outside the ingested directory" not in output
    assert summary(output).startswith("2 new, 0 updated, 0 unchanged")
    # Each file is ingested once, under the first path that reaches it.
    assert set(Document.objects.values_list("title", flat=True)) == {"Guide", "Page"}


def test_a_link_named_on_the_command_line_is_followed(tmp_path, outside):
    """The owner chose the root, so it is read wherever it points; only its inside is checked."""
    named = tmp_path / "handbook"
    named.symlink_to(outside, target_is_directory=True)
    output = ingest(str(named))
    assert summary(output).startswith("2 new, 0 updated, 0 unchanged, 0 skipped, 0 failed")
    assert set(Document.objects.values_list("title", flat=True)) == {"Private notes", "Secret key"}


def test_prune_removes_a_document_once_ingested_through_an_outside_link(docs, outside):
    link = docs / "x.txt"
    link.symlink_to(outside / "secret_key.txt")
    ingest(str(link))  # named on its own, as before the check existed: it is read
    assert secret_is_stored()
    output = ingest("--prune", str(docs))
    assert "outside the ingested directory" in skip_line(output, link)
    assert summary(output).startswith("1 new, 0 updated, 0 unchanged, 1 skipped, 0 failed, 1 pr")
    assert not secret_is_stored()
