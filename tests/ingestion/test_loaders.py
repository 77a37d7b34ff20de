"""ingestion.loaders: every format, the .gz variants and the inputs that must be refused."""

import gzip
import tracemalloc
from pathlib import Path

import pytest

from ingestion.loaders import SUPPORTED_SUFFIXES, LoadError, detect_format, load_document

LIMIT = 1_000_000


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    data = content.encode("utf-8") if isinstance(content, str) else content
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


def load(tmp_path: Path, name: str, content: str | bytes, max_bytes: int = LIMIT):
    return load_document(write(tmp_path, name, content), max_bytes=max_bytes)


# --- formats -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("guide.md", "markdown"),
        ("README.MD", "markdown"),
        ("a.markdown", "markdown"),
        ("a.rst", "rst"),
        ("page.mdx", "mdx"),
        ("guide.adoc", "asciidoc"),
        ("guide.asciidoc.gz", "asciidoc"),
        ("key.asc", None),
        ("a.html", "html"),
        ("a.htm", "html"),
        ("a.txt", "text"),
        ("a.text", "text"),
        ("guide.md.gz", "markdown"),
        ("page.HTML.GZ", "html"),
        ("notes.txt.gz", "text"),
        ("archive.gz", None),
        ("archive.tar.gz", None),
        ("image.png", None),
        ("Makefile", None),
        (".md", None),
    ],
)
def test_detect_format(name, expected):
    assert detect_format(Path("docs") / name) == expected


def test_supported_suffixes():
    assert {
        *(".md", ".markdown", ".mdx", ".rst", ".adoc", ".asciidoc", ".html", ".htm", ".txt"),
        *(".text", ".pdf", ".docx"),
    } == SUPPORTED_SUFFIXES


def test_unsupported_file_is_a_load_error(tmp_path):
    with pytest.raises(LoadError, match="unsupported"):
        load(tmp_path, "x.odt", "text")


def test_markdown_kept_as_is_with_first_h1_as_title(tmp_path):
    text = "Intro line.\n\n# Real Title\n\nBody with `code`.\n\n## Sub\n\n- item\n"
    doc = load(tmp_path, "guide.md", text)
    assert doc.format == "markdown"
    assert doc.title == "Real Title"
    assert doc.text == text
    assert doc.warnings == ()
    assert doc.path == tmp_path / "guide.md"


def test_markdown_front_matter_is_stripped_and_gives_the_title(tmp_path):
    text = '---\ntitle: "Install guide"\ntags: [a, b]\n---\nSome text.\n\n## Steps\n'
    doc = load(tmp_path, "install.md", text)
    assert doc.title == "Install guide"
    assert doc.text == "Some text.\n\n## Steps\n"


def test_markdown_h1_wins_over_front_matter_title(tmp_path):
    doc = load(tmp_path, "x.md", "---\ntitle: Front\n---\n# Heading\n\nText\n")
    assert doc.title == "Heading"
    assert doc.text == "# Heading\n\nText\n"


def test_markdown_leading_thematic_break_is_not_front_matter(tmp_path):
    text = "---\n\nJust text, not YAML.\n\n---\n\nMore.\n"
    doc = load(tmp_path, "x.md", text)
    assert doc.text == text


def test_markdown_title_falls_back_to_humanised_stem(tmp_path):
    doc = load(tmp_path, "getting-started_guide.md", "```bash\n# not a title\n```\n\ntext\n")
    assert doc.title == "Getting started guide"


def test_markdown_setext_headings_become_atx(tmp_path):
    text = "Title\n=====\n\nIntro.\n\nPart\n----\n\nBody.\n\n- item\n---\n"
    doc = load(tmp_path, "x.md", text)
    assert doc.title == "Title"
    assert doc.text == "# Title\n\nIntro.\n\n## Part\n\nBody.\n\n- item\n---\n"


def test_markdown_setext_lookalike_inside_code_is_left_alone(tmp_path):
    text = "```\nvalue\n=====\n```\n"
    assert load(tmp_path, "x.md", text).text == text


RST = """\
.. A comment that must not show up
   and its continuation.

==========
 The Guide
==========

Intro with :func:`os.path.join`, ``literal``, `Docs <https://example.org>`_
and :ref:`the setup <setup>`.

.. _setup:

Setup
=====

Text under setup.

Details
-------

.. note::
   Keep this note body.

.. warning:: Mind the gap.

   Second paragraph of the warning.

.. code-block:: python
   :linenos:

   def f():
       return 1

Run it like this::

    $ make
    # still code

More
====

Back at level two.

Deep
~~~~

.. toctree::
   :maxdepth: 2

   intro
"""


def test_rst_headings_code_and_directives(tmp_path):
    doc = load(tmp_path, "guide.rst", RST)
    assert doc.format == "rst"
    assert doc.title == "The Guide"
    assert doc.text == (
        "# The Guide\n"
        "\n"
        "Intro with `os.path.join`, `literal`, [Docs](https://example.org)\n"
        "and the setup.\n"
        "\n"
        "## Setup\n"
        "\n"
        "Text under setup.\n"
        "\n"
        "### Details\n"
        "\n"
        "Note:\n"
        "Keep this note body.\n"
        "\n"
        "Warning: Mind the gap.\n"
        "\n"
        "Second paragraph of the warning.\n"
        "\n"
        "```python\n"
        "def f():\n"
        "    return 1\n"
        "```\n"
        "\n"
        "Run it like this:\n"
        "\n"
        "```\n"
        "$ make\n"
        "# still code\n"
        "```\n"
        "\n"
        "## More\n"
        "\n"
        "Back at level two.\n"
        "\n"
        "#### Deep\n"
    )


def test_rst_levels_follow_first_appearance_of_each_style(tmp_path):
    # '-' comes first here, so it is level 1; '=' with an overline is a distinct style from '='.
    text = "Aa\n--\n\nBb\n===\n\n====\nCc\n====\n\nDd\n----\n\nEe\n==\n"
    doc = load(tmp_path, "x.rst", text)
    assert [line for line in doc.text.splitlines() if line] == [
        "# Aa",
        "## Bb",
        "### Cc",
        "# Dd",
        "## Ee",
    ]


def test_rst_short_underline_and_transition_are_not_headings(tmp_path):
    text = "Long title text\n===\n\nPara.\n\n----------\n\nAfter.\n"
    doc = load(tmp_path, "x.rst", text)
    assert "#" not in doc.text
    assert doc.text == "Long title text\n===\n\nPara.\n\nAfter.\n"
    assert doc.title == "X"


def test_rst_prose_starting_with_hash_is_escaped(tmp_path):
    doc = load(tmp_path, "x.rst", "Title\n=====\n\n# not a heading\n")
    assert doc.text == "# Title\n\n\\# not a heading\n"


HTML = """<!DOCTYPE html>
<html><head><title>Page &amp; Title</title>
<style>body { color: red }</style><script>var x = "<p>no</p>";</script>
<meta name="x" content="y"></head>
<body>
<header><a href="/">Site logo</a></header>
<nav><ul><li>Menu item</li></ul></nav>
<main>
<h1>Main heading<a class="headerlink" href="#x">¶</a></h1>
<p>First   paragraph
with <b>bold</b> and <code>code()</code> &lt;tag&gt;.</p>
<div>Second<br>line</div>
<ul><li>one</li><li><p>two</p></li></ul>
<h2>Code</h2>
<pre class="language-python">
def f():
    return  1   # spaces kept

print(f())
</pre>
<table><tr><th>Name</th><th>Value</th></tr><tr><td>a</td><td>1</td></tr></table>
<p># not a heading</p>
<noscript>Enable JS</noscript><template><p>tpl</p></template>
<svg><title>icon</title><text>svg text</text></svg>
</main>
<footer>Copyright footer</footer>
<script>alert("x")</script>
</body></html>
"""


def test_html_text_headings_lists_and_code(tmp_path):
    doc = load(tmp_path, "page.html", HTML)
    assert doc.format == "html"
    assert doc.title == "Page & Title"
    assert doc.text == (
        "# Main heading\n"
        "\n"
        "First paragraph with bold and `code()` <tag>.\n"
        "\n"
        "Second\n"
        "line\n"
        "\n"
        "- one\n"
        "- two\n"
        "\n"
        "## Code\n"
        "\n"
        "```python\n"
        "def f():\n"
        "    return  1   # spaces kept\n"
        "\n"
        "print(f())\n"
        "```\n"
        "\n"
        "Name | Value\n"
        "a | 1\n"
        "\n"
        "\\# not a heading\n"
    )


@pytest.mark.parametrize(
    "dropped",
    ["color: red", "var x", "no</p>", "alert", "Site logo", "Menu item", "Enable JS", "tpl", "svg"],
)
def test_html_drops_scripts_styles_and_chrome(tmp_path, dropped):
    assert dropped not in load(tmp_path, "page.html", HTML).text


def test_html_title_falls_back_to_first_h1_and_keeps_article_header(tmp_path):
    html = "<article><header><h1>Article H1</h1></header><p>Body</p></article>"
    doc = load(tmp_path, "a.htm", html)
    assert doc.title == "Article H1"
    assert doc.text == "# Article H1\n\nBody\n"


def test_html_sphinx_page(tmp_path):
    html = (
        "<html><head><title>Install &#8212; Proj docs</title></head><body>"
        '<div role="navigation"><h3>Navigation</h3><ul><li>index</li></ul></div>'
        '<div role="main"><section><h1>Install<a class="headerlink" href="#i">\u00b6</a></h1>'
        '<div class="highlight-bash"><pre><span></span>pip<span> </span>install x\n'
        '<span class="c1"># comment</span>\n</pre></div>'
        "<ul><li>Top<ul><li>Nested</li></ul></li><li>Second</li></ul>"
        '</section></div><div role="contentinfo">&copy; 2024</div></body></html>'
    )
    doc = load(tmp_path, "install.html", html)
    assert doc.title == "Install"  # the site's name is not the page's title
    assert doc.text == (
        "# Install\n\n```\npip install x\n# comment\n```\n\n- Top\n  - Nested\n- Second\n"
    )


def test_html_docbook_and_yui_navigation_bars_are_dropped(tmp_path):
    # The PostgreSQL manual (DocBook) and Django's docs (YUI layout) mark their navigation with
    # classes and ids only; their "Prev | Up | Home | Next" text once led chunks of every page.
    html = (
        "<html><head><title>CREATE ROLE</title></head><body>"
        '<div class="navheader"><table><tr><td><a href="p.html">Prev</a></td>'
        '<td><a href="u.html">Up</a></td><th>SQL Commands</th></tr></table></div>'
        '<div id="hd"><h1>Site docs</h1><div class="nav">previous | up</div></div>'
        '<div class="refentry"><h2>CREATE ROLE</h2>'
        "<p>CREATE ROLE \u2014 define a new role</p></div>"
        '<div class="yui-b" id="sidebar"><h3>Last update:</h3></div>'
        '<div class="navfooter"><a href="n.html">Next</a> Home</div><div id="ft">next</div>'
        "</body></html>"
    )
    doc = load(tmp_path, "sql-createrole.html", html)
    assert doc.title == "CREATE ROLE"
    assert doc.text == "## CREATE ROLE\n\nCREATE ROLE \u2014 define a new role\n"


@pytest.mark.parametrize(
    ("title", "h1", "expected"),
    [
        ("Signals \u2014 Django 3.2 documentation", "Signals", "Signals"),
        ("Install | Proj", "Install", "Install"),
        ("Backups - Handbook", "Backups", "Backups"),
        ("Foo-bar", "Foo", "Foo-bar"),  # a hyphenated title is not a title and a site name
        ("Tutorial: part 1", "Tutorial", "Tutorial: part 1"),
        ("Page title", "Another heading", "Page title"),
    ],
)
def test_html_title_without_the_site_name(tmp_path, title, h1, expected):
    doc = load(tmp_path, "a.html", f"<title>{title}</title><h1>{h1}</h1><p>Body</p>")
    assert doc.title == expected


def test_html_class_names_only_whole_tokens_are_chrome(tmp_path):
    html = '<div class="navbar-content footnote"><p>Kept text</p></div><p>Body</p>'
    assert "Kept text" in load(tmp_path, "a.html", html).text


def test_html_with_only_scripts_is_empty(tmp_path):
    with pytest.raises(LoadError, match="empty"):
        load(tmp_path, "a.html", "<html><head><title>T</title></head><script>x()</script></html>")


def test_plain_text_as_is_with_humanised_title(tmp_path):
    text = "  indented line\n# looks like a heading\n\n\n\nend\n"
    doc = load(tmp_path, "release_notes.txt", text)
    assert doc.format == "text"
    assert doc.title == "Release notes"
    assert doc.text == text


def test_normalises_newlines_trailing_space_bom_and_control_chars(tmp_path):
    raw = "\ufeffline one  \r\nline\x07 two\t\rtab\there\x1b[0m\x0c\n".encode()
    doc = load(tmp_path, "x.txt", raw)
    assert doc.text == "line one\nline two\ntab\there[0m\n"


def test_utf16_with_bom_is_decoded(tmp_path):
    doc = load(tmp_path, "x.md", "# Titre\n\nété\n".encode("utf-16"))
    assert doc.title == "Titre"
    assert doc.text == "# Titre\n\nété\n"


# --- .gz -----------------------------------------------------------------------------------------


def test_gzipped_markdown_loads_with_title_from_inner_stem(tmp_path):
    doc = load(tmp_path, "user-guide.md.gz", "No heading here.\n")
    assert doc.format == "markdown"
    assert doc.title == "User guide"
    assert doc.text == "No heading here.\n"


def test_gzipped_html_and_rst(tmp_path):
    assert load(tmp_path, "p.html.gz", "<h1>Hi</h1><p>x</p>").text == "# Hi\n\nx\n"
    assert load(tmp_path, "p.rst.gz", "Hi\n==\n\nx\n").text == "# Hi\n\nx\n"


# --- bad inputs ----------------------------------------------------------------------------------


def test_binary_file_is_refused(tmp_path):
    with pytest.raises(LoadError, match="looks binary"):
        load(tmp_path, "x.md", b"PK\x03\x04\x00\x00binary")


def test_nul_after_first_8kb_is_not_binary_and_is_removed(tmp_path):
    doc = load(tmp_path, "x.txt", b"a" * 9000 + b"\x00b")
    assert doc.text == "a" * 9000 + "b\n"


def test_invalid_utf8_falls_back_to_cp1252_with_warning(tmp_path):
    doc = load(tmp_path, "x.md", b"# Caf\xe9\n\nIt\x92s \x93quoted\x94.\n")
    assert doc.title == "Café"
    assert doc.text == "# Café\n\nIt\u2019s \u201cquoted\u201d.\n"
    assert len(doc.warnings) == 1
    assert "not valid UTF-8" in doc.warnings[0]
    assert "cp1252" in doc.warnings[0]


def test_bytes_undefined_in_cp1252_fall_back_to_latin1(tmp_path):
    doc = load(tmp_path, "x.txt", b"na\xefve \x81 text\n")  # 0x81 is unassigned in cp1252
    assert doc.text == "naïve  text\n"  # U+0081 is a control character, so it is removed
    assert "latin-1" in doc.warnings[0]


@pytest.mark.parametrize("content", [b"", b"   \n\t\n\r\n", b"\xef\xbb\xbf\n"])
def test_empty_file_is_refused(tmp_path, content):
    with pytest.raises(LoadError, match="empty file"):
        load(tmp_path, "x.md", content)


def test_empty_gzip_is_refused(tmp_path):
    with pytest.raises(LoadError, match="empty file"):
        load(tmp_path, "x.md.gz", b"")


def test_too_large_file_is_refused_with_size_and_limit(tmp_path):
    with pytest.raises(LoadError) as info:
        load(tmp_path, "x.txt", b"a" * 3000, max_bytes=2048)
    message = str(info.value)
    assert "too large" in message
    assert "3,000 bytes" in message
    assert "2,048 bytes" in message


def test_file_exactly_at_the_limit_loads(tmp_path):
    assert load(tmp_path, "x.txt", b"a" * 2048, max_bytes=2048).text == "a" * 2048 + "\n"


def test_corrupt_gzip_is_refused(tmp_path):
    path = tmp_path / "x.md.gz"
    path.write_bytes(b"this is not gzip at all")
    with pytest.raises(LoadError, match="corrupt gzip"):
        load_document(path, max_bytes=LIMIT)


def test_truncated_gzip_is_refused(tmp_path):
    path = tmp_path / "x.md.gz"
    path.write_bytes(gzip.compress(b"hello world " * 1000)[:-20])
    with pytest.raises(LoadError, match="corrupt gzip"):
        load_document(path, max_bytes=LIMIT)


def test_gzip_bomb_is_refused_without_inflating_it(tmp_path):
    path = tmp_path / "bomb.txt.gz"
    with gzip.open(path, "wb", compresslevel=9) as f:
        block = b"a" * (1 << 20)
        for _ in range(200):  # 200 MiB inflated, about 200 KB on disk
            f.write(block)
    assert path.stat().st_size < 1_000_000
    tracemalloc.start()
    try:
        with pytest.raises(LoadError, match="too large") as info:
            load_document(path, max_bytes=LIMIT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "decompresses to more than" in str(info.value)
    assert peak < 10 * LIMIT


def test_missing_file_is_a_load_error(tmp_path):
    with pytest.raises(LoadError, match="cannot read"):
        load_document(tmp_path / "missing.md", max_bytes=LIMIT)
