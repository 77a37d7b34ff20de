"""`manage.py ingest_docs` end to end, against the real embedded PostgreSQL."""

import gzip
import threading
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connections

from ragapp.models import Chunk, Document, EmbeddingIndex
from tests.ingestion.commands import ingest, ingest_failing

pytestmark = pytest.mark.django_db


def summary(output: str) -> str:
    return [line for line in output.splitlines() if " new, " in line][-1]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "guide.md").write_text(
        "# Guide\n\nInstall the tool.\n\n## Reset a password\n\nRun `reset` as admin.\n"
    )
    (tmp_path / "api.rst").write_text("API\n===\n\nThe API has endpoints.\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "page.html").write_text(
        "<html><head><title>Page</title><script>alert(1)</script></head>"
        "<body><h1>Page</h1><p>Hello from HTML.</p></body></html>"
    )
    (tmp_path / "notes.txt").write_text("Plain notes about deployment.\n")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return tmp_path


def test_first_run_ingests_every_supported_file(tree, fake_embeddings):
    output = ingest(str(tree))
    assert summary(output).startswith("4 new, 0 updated, 0 unchanged, 1 skipped, 0 failed")
    assert Document.objects.count() == 4
    assert set(Document.objects.values_list("format", flat=True)) == {
        "markdown",
        "rst",
        "html",
        "text",
    }
    page = Document.objects.get(source_path__endswith="sub/page.html")
    assert page.title == "Page"
    assert "alert" not in "".join(page.chunks.values_list("text", flat=True))
    reset = Chunk.objects.get(document__title="Guide", heading_path__endswith="Reset a password")
    assert "Run `reset` as admin." in reset.text
    index = EmbeddingIndex.objects.get()
    assert (index.model, index.dimensions) == (fake_embeddings.model_id, 64)


def test_rerun_on_unchanged_tree_embeds_nothing(tree, fake_embeddings):
    ingest(str(tree))
    calls_before = len(fake_embeddings.calls)
    output = ingest(str(tree))
    assert summary(output).startswith("0 new, 0 updated, 4 unchanged, 1 skipped, 0 failed")
    assert "0 chunks embedded" in output
    assert len(fake_embeddings.calls) == calls_before


def test_changed_file_is_replaced_and_others_untouched(tree):
    ingest(str(tree))
    guide = Document.objects.get(title="Guide")
    untouched = set(Chunk.objects.exclude(document=guide).values_list("id", flat=True))
    (tree / "guide.md").write_text("# Guide\n\nA completely new text about upgrades.\n")
    output = ingest(str(tree))
    assert summary(output).startswith("0 new, 1 updated, 3 unchanged")
    texts = list(Chunk.objects.filter(document=guide).values_list("text", flat=True))
    assert texts == ["# Guide\n\nA completely new text about upgrades."]
    assert set(Chunk.objects.exclude(document=guide).values_list("id", flat=True)) == untouched


def test_full_re_embeds_everything(tree, fake_embeddings):
    ingest(str(tree))
    output = ingest("--full", str(tree))
    assert summary(output).startswith("0 new, 4 updated, 0 unchanged")


def test_prune_removes_documents_whose_files_are_gone(tree):
    ingest(str(tree))
    (tree / "notes.txt").unlink()
    output = ingest(str(tree))
    assert Document.objects.filter(source_path__endswith="notes.txt").exists()  # no --prune
    output = ingest("--prune", str(tree))
    assert summary(output).endswith(
        "0 new, 0 updated, 3 unchanged, 1 skipped, 0 failed, 1 pruned"
        + summary(output).split("1 pruned")[1]
    )
    assert not Document.objects.filter(source_path__endswith="notes.txt").exists()
    assert Document.objects.count() == 3


def test_prune_ignores_a_root_that_does_not_exist(tree):
    ingest(str(tree))
    ingest_failing("--prune", str(tree / "typo"))
    assert Document.objects.count() == 4


def test_dry_run_reports_and_changes_nothing(tree, fake_embeddings):
    output = ingest("--dry-run", str(tree))
    assert "Dry run, would be: 4 new" in output
    assert Document.objects.count() == 0
    assert fake_embeddings.calls == []


def test_gzip_compressed_files_are_read(tmp_path):
    (tmp_path / "manual.md.gz").write_bytes(gzip.compress(b"# Manual\n\nCompressed text.\n"))
    ingest(str(tmp_path))
    document = Document.objects.get()
    assert (document.title, document.format) == ("Manual", "markdown")


def test_bad_inputs_are_reported_and_never_abort_the_rest(tmp_path, tmp_path_factory, settings):
    settings.RAG_MAX_FILE_BYTES = 1024 * 1024
    (tmp_path / "good.md").write_text("# Good\n\nFine text.\n")
    (tmp_path / "binary.md").write_bytes(b"\x00\x01\x02 not text")
    (tmp_path / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me".encode("latin-1"))
    (tmp_path / "empty.md").write_text("")
    (tmp_path / "huge.md").write_text("word " * 300_000)  # 1.5 MB, over the limit
    (tmp_path / "broken.gz.md").write_text("fine, despite the odd name")
    (tmp_path / "corrupt.md.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    (tmp_path / "dangling.md").symlink_to(tmp_path / "missing.md")
    # Reading /proc/self/mem at offset 0 fails with EIO: a file that exists but cannot be read.
    # Named on the command line, since a link inside the tree to outside it is skipped unread.
    unreadable = tmp_path_factory.mktemp("named") / "unreadable.md"
    unreadable.symlink_to("/proc/self/mem")
    (tmp_path / "loop").mkdir()
    (tmp_path / "loop" / "again").symlink_to(tmp_path / "loop")
    (tmp_path / "loop" / "inside.md").write_text("# Inside\n\nReached once.\n")

    output, error = ingest_failing(str(tmp_path), str(tmp_path / "does-not-exist"), str(unreadable))

    lines = {line.split(": ")[0].split()[-1]: line for line in output.splitlines() if ": " in line}

    def reason(name: str) -> str:
        return next(line for key, line in lines.items() if key.endswith(name))

    assert "binary" in reason("binary.md") and "failed" in reason("binary.md")
    assert "empty" in reason("empty.md") and "skipped" in reason("empty.md")
    assert "limit" in reason("huge.md") and "failed" in reason("huge.md")
    assert "failed" in reason("corrupt.md.gz")
    assert "failed" in reason("dangling.md")
    assert "failed" in reason("unreadable.md")
    assert "does not exist" in reason("does-not-exist")
    assert "symlink loop" in reason("again")
    ingested = set(Document.objects.values_list("title", flat=True))
    assert {"Good", "Inside", "Latin1", "Broken.gz"} <= ingested
    latin = Document.objects.get(title="Latin1")
    assert latin.chunks.get().text == "Café crème"
    assert latin.metadata["warnings"]  # the fallback decoding is recorded, not hidden
    assert "6 file(s) failed" in error
    assert Chunk.objects.filter(document__title="Inside").count() == 1  # the loop ran once


def test_exit_status_is_zero_when_only_skips_happen(tmp_path):
    (tmp_path / "ok.md").write_text("# Ok\n\nText.\n")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    ingest(str(tmp_path))  # raises CommandError (non-zero exit) if anything failed


def test_failed_reload_keeps_the_previous_version(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Page\n\nVersion one.\n")
    ingest(str(tmp_path))
    page.write_bytes(b"\x00 now binary")
    ingest_failing(str(tmp_path))
    assert Chunk.objects.get(document__title="Page").text == "# Page\n\nVersion one."


def test_same_model_other_dimension_fails_with_a_reembed_hint(tree, settings):
    ingest(str(tree))
    from ragapp.providers import embeddings as factory
    from ragapp.providers.fake_embeddings import FakeEmbeddings

    factory._cache["fake"] = FakeEmbeddings(dimensions=32)
    _, error = ingest_failing(str(tree))
    assert "64 dimensions" in error and "32 dimensions" in error
    assert "ingest_docs --reembed" in error
    # Following the hint works: everything is re-embedded and the index switches model.
    out = StringIO()
    call_command("ingest_docs", "--reembed", stdout=out)
    assert "Re-embedded 4 chunks" in out.getvalue() or "Re-embedded" in out.getvalue()
    assert EmbeddingIndex.objects.get().dimensions == 32
    assert {len(v) for v in Chunk.objects.values_list("embedding", flat=True)} == {32}
    ingest(str(tree))  # and ingesting works again


@pytest.mark.django_db(transaction=True)
def test_readers_never_see_a_half_replaced_document(tmp_path):
    """A reader polling during re-ingestion sees exactly the old chunks or exactly the new."""
    doc = tmp_path / "big.md"
    old = "\n\n".join(f"Old paragraph {i} " + "lorem " * 60 for i in range(300))
    new = "\n\n".join(f"New paragraph {i} " + "ipsum " * 60 for i in range(400))
    doc.write_text("# Big\n\n" + old)
    ingest(str(tmp_path))
    document_id = Document.objects.get().id
    old_count = Chunk.objects.filter(document_id=document_id).count()
    seen: set[tuple[int, str]] = set()
    stop = threading.Event()

    def reader():
        try:
            while not stop.is_set():
                texts = list(
                    Chunk.objects.filter(document_id=document_id).values_list("text", flat=True)
                )
                kinds = {"old" if "lorem" in t else "new" for t in texts if "paragraph" in t}
                seen.add((len(texts), "+".join(sorted(kinds))))
        finally:
            connections.close_all()

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        doc.write_text("# Big\n\n" + new)
        ingest(str(tmp_path))
    finally:
        stop.set()
        thread.join()
    new_count = Chunk.objects.filter(document_id=document_id).count()
    assert old_count != new_count
    assert seen <= {(old_count, "old"), (new_count, "new")}, seen
    assert (old_count, "old") in seen


def test_path_stored_relative_to_the_project_for_bundled_docs(settings):
    docs = Path(settings.BASE_DIR) / "docs"
    ingest(str(docs / "index.md"))
    assert Document.objects.get().source_path == "docs/index.md"


def test_no_paths_is_a_clear_error():
    _, error = ingest_failing()
    assert "at least one file or directory" in error


def test_a_file_the_embedder_rejects_fails_alone(tmp_path):
    """An embedding error is isolated to its file; the pool's other files are stored."""
    from ragapp.providers import embeddings as factory
    from ragapp.providers.fake_embeddings import FakeEmbeddings

    class Picky(FakeEmbeddings):
        def embed_documents(self, texts):
            if any("POISON" in text for text in texts):
                raise ValueError("input rejected by the model")
            return super().embed_documents(texts)

    factory._cache["fake"] = Picky()
    (tmp_path / "good.md").write_text("# Good\n\nFine text.\n")
    (tmp_path / "bad.md").write_text("# Bad\n\nPOISON text.\n")
    (tmp_path / "also.md").write_text("# Also\n\nMore fine text.\n")
    output, error = ingest_failing(str(tmp_path))
    assert "bad.md: embedding failed: input rejected by the model" in output
    assert set(Document.objects.values_list("title", flat=True)) == {"Good", "Also"}
    assert "1 file(s) failed" in error


def test_mdx_and_asciidoc_pages_are_ingested_by_their_sections(tmp_path):
    (tmp_path / "install.mdx").write_text(
        "import Tabs from '@theme/Tabs';\n\n# Install\n\n<Tabs>\n<TabItem label=\"Linux\">\n\n"
        "## On Linux\n\nRun `apt install acme`.\n\n</TabItem>\n</Tabs>\n"
    )
    (tmp_path / "guide.adoc").write_text(
        "= Guide\n:product: Acme\n\n== Configuration\n\n--port::\n\tThe port {product} uses.\n"
    )
    output = ingest(str(tmp_path))
    assert summary(output).startswith("2 new, 0 updated, 0 unchanged, 0 skipped, 0 failed")
    formats = dict(Document.objects.values_list("title", "format"))
    assert formats == {"Install": "mdx", "Guide": "asciidoc"}
    linux = Chunk.objects.get(document__format="mdx", heading_path__endswith="On Linux")
    assert "Run `apt install acme`." in linux.text and "Tabs" not in linux.text
    port = Chunk.objects.get(document__format="asciidoc", heading_path__endswith="Configuration")
    assert "**--port**" in port.text and "The port Acme uses." in port.text
