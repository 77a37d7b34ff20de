"""MDX and AsciiDoc pages: read through `load_document` as `ingest_docs` reads them."""

from pathlib import Path

from ingestion.loaders import load_document

LIMIT = 1_000_000


def load(tmp_path: Path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return load_document(path, max_bytes=LIMIT)


MDX = """---
title: Install the CLI
url: https://docs.example.com/install
---
import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';

export const Highlight = ({children}) => (
  <span>{children}</span>
);

# Installing

{/* maintainers: keep the tabs in sync */}
Run the installer for your system, or see the `<Tabs>` component's docs.

<Tabs groupId="os">
  <TabItem value="mac" label="macOS">

Use Homebrew:

```bash
brew install acme
<TabItem value="not-a-tag">
```

  </TabItem>
  <TabItem
    value="linux"
    label={"Linux"}
  >
Use `apt install acme`.
  </TabItem>
</Tabs>

:::warning Root needed
You need `sudo` on Linux.
:::

Press <kbd>Ctrl</kbd> and <Highlight color="#25c2a0">this</Highlight> works when 3 < 4.
"""


def test_mdx_keeps_the_prose_and_code_and_drops_modules_comments_and_component_tags(tmp_path):
    doc = load(tmp_path, "install.mdx", MDX)
    assert (doc.format, doc.title, doc.url) == (
        "mdx",
        "Installing",
        "https://docs.example.com/install",
    )
    assert doc.text == (
        "# Installing\n"
        "\n"
        "Run the installer for your system, or see the `<Tabs>` component's docs.\n"
        "\n"
        "**macOS**\n"
        "\n"
        "Use Homebrew:\n"
        "\n"
        "```bash\n"
        "brew install acme\n"
        '<TabItem value="not-a-tag">\n'
        "```\n"
        "\n"
        "**Linux**\n"
        "\n"
        "Use `apt install acme`.\n"
        "\n"
        "**Warning:** Root needed\n"
        "You need `sudo` on Linux.\n"
        "\n"
        "Press <kbd>Ctrl</kbd> and this works when 3 < 4.\n"
    )


def test_mdx_title_comes_from_the_front_matter_without_a_heading(tmp_path):
    doc = load(tmp_path, "page.mdx", "---\ntitle: From front matter\n---\n<Note>Body.</Note>\n")
    assert (doc.title, doc.text) == ("From front matter", "Body.\n")


ASCIIDOC = """= Acme CLI Guide
Jane Doe <jane@example.com>
v2.1, 2026-01-01
:product: Acme
:toc:

// a comment line
{product} installs with one command.
See link:https://example.com/docs[the site], https://example.com/faq[the FAQ]
and <<config,Configuration>>.

== Installing

.Install on Linux
[source,bash]
----
sudo apt install acme
# a shell comment, not a heading
----

NOTE: You need root for this.

[WARNING]
====
Back up `/etc/acme` first.
====

[[config]]
== Configuration

--verbose::
-v::
\tBe verbose. Print each step
\tas it runs.

--port=<n>::
\tListen on port <n> (default 8080).
+
Only root may use ports under 1024.

* one item
** nested item

.Settings
|===
|Name |Default |Meaning

|`ACME_HOME`
|`~/.acme`
|Where {product} keeps its data.

|`ACME_PORT` |8080 |The port.
|===

[cols="1,2"]
|===
h|Limit 2+^|Per row, no blank line
|a|b \\| c |d
a|* item
|===

  an indented literal
  paragraph

////
a block comment
////
include::partials/footer.adoc[]
image::diagram.png[]
Press kbd:[Ctrl+C], read xref:install.adoc[Install], xref:setup.adoc[] and linkgit:git-add[1].
"""


def test_asciidoc_sections_code_lists_tables_and_macros(tmp_path):
    doc = load(tmp_path, "guide.adoc", ASCIIDOC)
    assert (doc.format, doc.title) == ("asciidoc", "Acme CLI Guide")
    assert doc.text == (
        "# Acme CLI Guide\n"
        "\n"
        "Acme installs with one command.\n"
        "See [the site](https://example.com/docs), [the FAQ](https://example.com/faq)\n"
        "and Configuration.\n"
        "\n"
        "## Installing\n"
        "\n"
        "**Install on Linux**\n"
        "\n"
        "```bash\n"
        "sudo apt install acme\n"
        "# a shell comment, not a heading\n"
        "```\n"
        "\n"
        "Note: You need root for this.\n"
        "\n"
        "Warning:\n"
        "\n"
        "Back up `/etc/acme` first.\n"
        "\n"
        "## Configuration\n"
        "\n"
        "**--verbose**\n"
        "**-v**\n"
        "Be verbose. Print each step\n"
        "as it runs.\n"
        "\n"
        "**--port=<n>**\n"
        "Listen on port <n> (default 8080).\n"
        "Only root may use ports under 1024.\n"
        "\n"
        "- one item\n"
        "  - nested item\n"
        "\n"
        "**Settings**\n"
        "\n"
        "| Name | Default | Meaning |\n"
        "| `ACME_HOME` | `~/.acme` | Where Acme keeps its data. |\n"
        "| `ACME_PORT` | 8080 | The port. |\n"
        "\n"
        "| Limit | Per row, no blank line |\n"
        "| a | b | c |\n"
        "| d | * item |\n"
        "\n"
        "```\n"
        "an indented literal\n"
        "paragraph\n"
        "```\n"
        "\n"
        "Press Ctrl+C, read Install, setup and git-add(1).\n"
    )


# Git's manual pages: titles underlined, a verse paragraph, options as a description list.
GIT_PAGE = """git-add(1)
==========

NAME
----
git-add - Add file contents to the index

SYNOPSIS
--------
[verse]
'git add' [--verbose | -v] [--dry-run | -n]
\t  [--] [<pathspec>...]

OPTIONS
-------
-n::
--dry-run::
\tDon't actually add the file(s), just show if they exist.

Subsection
~~~~~~~~~~
Text.
"""


def test_asciidoc_two_line_titles_and_a_verse_paragraph(tmp_path):
    doc = load(tmp_path, "git-add.adoc", GIT_PAGE)
    assert doc.title == "git-add(1)"
    assert doc.text == (
        "# git-add(1)\n"
        "\n"
        "## NAME\n"
        "\n"
        "git-add - Add file contents to the index\n"
        "\n"
        "## SYNOPSIS\n"
        "\n"
        "```\n"
        "'git add' [--verbose | -v] [--dry-run | -n]\n"
        "          [--] [<pathspec>...]\n"
        "```\n"
        "\n"
        "## OPTIONS\n"
        "\n"
        "**-n**\n"
        "**--dry-run**\n"
        "Don't actually add the file(s), just show if they exist.\n"
        "\n"
        "### Subsection\n"
        "\n"
        "Text.\n"
    )


def test_asciidoc_prose_that_looks_like_markdown_stays_prose(tmp_path):
    doc = load(tmp_path, "x.adoc", "= T\n\n# not a heading\n\n----\n# code\n----\n")
    assert doc.text == "# T\n\n\\# not a heading\n\n```\n# code\n```\n"
