"""`ingest_docs --base-url`: each document's published page, kept per ingest root."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from ingestion.publishing import heading_anchor, page_url
from ragapp.models import Chunk, Document, EmbeddingIndex, IngestRoot
from ragapp.providers import get_embeddings
from ragapp.retrieval.retrievers import VectorRetriever

pytestmark = pytest.mark.django_db

BASE = "https://docs.example.com/v2/"


def ingest(*args: str) -> str:
    out = StringIO()
    call_command("ingest_docs", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "guide.md").write_text(
        "# Guide\n\nInstall the tool.\n\n## Reset a password!\n\nRun `reset` as admin.\n"
    )
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "tokens.rst").write_text("Tokens\n======\n\nTokens expire after a day.\n")
    (tmp_path / "own.md").write_text(
        "---\ntitle: Own\nurl: https://elsewhere.example.org/own-page/\n---\n# Own\n\nText.\n"
    )
    (tmp_path / "page.html").write_text(
        '<html><head><title>Page</title><link rel="canonical" href="/canonical/page/">'
        "</head><body><h1>Page</h1><p>Hello.</p></body></html>"
    )
    (tmp_path / "evil.md").write_text("---\nurl: javascript:alert(1)\n---\n# Evil\n\nText.\n")
    return tmp_path


def urls() -> dict[str, str]:
    return dict(Document.objects.values_list("relative_path", "url"))


def test_each_page_gets_the_base_url_plus_its_path_or_its_own_url(tree):
    ingest(str(tree), "--base-url", BASE.rstrip("/"))  # the trailing slash is added
    assert urls() == {
        "guide.md": BASE + "guide.html",
        "api/tokens.rst": BASE + "api/tokens.html",
        "own.md": "https://elsewhere.example.org/own-page/",  # front matter wins
        "page.html": "https://docs.example.com/canonical/page/",  # so does rel=canonical
        "evil.md": BASE + "evil.html",  # not a web address: the base URL's page instead
    }
    reset = Chunk.objects.get(heading_path="Guide > Reset a password!")
    assert reset.public_url == BASE + "guide.html#reset-a-password"
    top = Chunk.objects.get(heading_path="Guide")
    assert top.public_url == BASE + "guide.html"  # the page's own title: no anchor
    assert IngestRoot.objects.get().base_url == BASE


def test_later_runs_keep_the_base_url_even_on_a_subfolder(tree, fake_embeddings):
    ingest(str(tree), "--base-url", BASE)
    (tree / "api" / "tokens.rst").write_text("Tokens\n======\n\nTokens expire after a week.\n")
    ingest(str(tree / "api"))  # no --base-url: the enclosing root's is kept
    tokens = Document.objects.get(relative_path="api/tokens.rst")
    assert tokens.url == BASE + "api/tokens.html"
    assert IngestRoot.objects.count() == 1


def test_a_new_base_url_relinks_unchanged_pages_without_re_embedding(tree, fake_embeddings):
    ingest(str(tree))
    assert urls()["guide.md"] == ""
    calls = len(fake_embeddings.calls)
    output = ingest(str(tree), "--base-url", "https://new.example.com/")
    assert "0 new, 0 updated, 5 unchanged" in output
    assert len(fake_embeddings.calls) == calls
    assert urls()["guide.md"] == "https://new.example.com/guide.html"


def test_dry_run_shows_the_urls_and_records_nothing(tree):
    output = ingest("--dry-run", str(tree), "--base-url", BASE)
    assert f"guide.md -> {BASE}guide.html" in output
    assert f"api/tokens.rst -> {BASE}api/tokens.html" in output
    assert not IngestRoot.objects.exists() and not Document.objects.exists()


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("docs.example.com", "must start with http:// or https://"),
        ("ftp://docs.example.com/", "must start with http:// or https://"),
        ("https://", "is not a valid URL"),
        ("https://docs.example.com/?v=2", "must not have a query"),
    ],
)
def test_a_malformed_base_url_is_refused_before_anything_is_read(tmp_path, url, reason):
    with pytest.raises(CommandError, match=reason.replace("?", r"\?")):
        call_command("ingest_docs", str(tmp_path / "missing"), "--base-url", url, stdout=StringIO())
    # Not even the embedding index was touched, and the missing path was never looked at.
    assert not EmbeddingIndex.objects.exists() and not IngestRoot.objects.exists()


def test_sources_carry_the_link_and_never_an_absolute_path(tree):
    ingest(str(tree), "--base-url", BASE)
    docs = VectorRetriever(get_embeddings()).search("reset a password as admin", k=5)
    reset = next(d for d in docs if d.heading_path == "Guide > Reset a password!")
    summary = reset.summary()
    assert reset.source_path.startswith("/")  # the key stays what ingest_docs uses
    assert summary["source_path"] == "guide.md"
    assert summary["url"] == BASE + "guide.html#reset-a-password"


def test_the_suffix_map_is_a_setting(settings):
    settings.RAG_URL_SUFFIX_MAP = {".md": "/", ".txt": ""}
    assert page_url(BASE, "guide/intro.md") == BASE + "guide/intro/"
    assert page_url(BASE, "notes.txt.gz") == BASE + "notes"
    assert page_url(BASE, "a b.rst") == BASE + "a%20b.rst"


@pytest.mark.parametrize(
    ("style", "heading", "anchor"),
    [
        ("github", "Reset a password!", "reset-a-password"),
        ("github", "Über  `--full` flag", "über----full-flag"),
        ("mkdocs", "Über  `--full` flag", "uber-full-flag"),
        ("sphinx", "2. Über  `--full` flag", "uber-full-flag"),
        ("asciidoctor", "Install on Linux", "_install_on_linux"),
        ("asciidoctor", "Use git-add(1) and `--full`", "_use_git_add1_and_full"),
        ("none", "Anything", ""),
    ],
)
def test_heading_anchors_follow_the_generators_slug_styles(style, heading, anchor):
    assert heading_anchor(heading, style) == anchor
