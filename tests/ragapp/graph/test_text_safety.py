"""text_safety: the one normaliser of untrusted text, and tag names found through disguises.

Ingestion and the prompts both use it, so both are tested here: `normalise_unicode` itself, the
ingestion loader that calls it, and `tag_openers`, which `prompts.defuse` relies on.
"""

import pytest

from ingestion.loaders import load_document
from ingestion.loaders.decoding import normalise
from ragapp.graph.text_safety import normalise_unicode, tag_openers

NAMES = ("documents", "document", "answer")
# The spellings of a closing tag that got past the old fixed list, and the full-width one.
DISGUISED = {
    "zero-width-space": "<\u200b/document>",
    "soft-hyphen": "</doc\u00adument>",
    "full-width": "\uff1c/document\uff1e",
    "cyrillic-o": "</d\u043ecument>",
}


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        (DISGUISED["zero-width-space"], "</document>"),
        (DISGUISED["soft-hyphen"], "</document>"),
        (DISGUISED["full-width"], "</document>"),
        ("<\u200c/\u200ddocu\u2060ment\ufeff>", "</document>"),
        ("\U0001d41d\U0001d428\U0001d41c", "doc"),  # mathematical bold
        ("\ufb01le", "file"),  # the "fi" ligature
        ("visible\U000e0049\U000e0047\U000e004e\U000e004f\U000e0052\U000e0045", "visible"),
        ("cafe\u0301", "caf\u00e9"),
        ("e\u200b\u0301", "\u00e9"),  # composed once the zero-width space is gone
    ],
)
def test_normalising_makes_compatibility_forms_plain_and_drops_invisibles(text, plain):
    assert normalise_unicode(text) == plain


def test_normalising_keeps_other_scripts_as_they_are():
    # NFKC does not fold scripts: the Cyrillic look-alike is for tag matching to see through.
    assert normalise_unicode(DISGUISED["cyrillic-o"]) == DISGUISED["cyrillic-o"]
    assert normalise_unicode("Привет, мир; 日本語") == "Привет, мир; 日本語"


def test_normalising_twice_changes_nothing():
    text = "".join(DISGUISED.values()) + "\ufb01 e\u200b\u0301 \uff21 \u00bd \U000e0041"
    once = normalise_unicode(text)
    assert normalise_unicode(once) == once


@pytest.mark.parametrize("name", DISGUISED)
def test_every_disguised_closing_tag_is_found_after_normalising(name):
    assert tag_openers(normalise_unicode(DISGUISED[name]), NAMES) == [0]


@pytest.mark.parametrize(
    "text",
    [
        "</DOCUMENT>",
        "< / document >",
        "</d\u043e\u0441um\u0435nt>",  # Cyrillic o, es, ie
        "</\u0391NSW\u0395R>",  # Greek capital Alpha and Epsilon
        "</d.o.c.u.m.e.n.t>",
        "</docu\u2062ment>",  # invisible times: a format character not in the removed list
        "</\u1e0docume\u0301nt>",
        "\u2039/document\u203a",
        "<documents>",
    ],
)
def test_tag_names_are_found_through_case_look_alikes_and_separators(text):
    assert tag_openers(text, NAMES) == [0]


@pytest.mark.parametrize(
    "text",
    ["<documentation>", "</doc>", "x < y document", "<x document>", "<div>", "document>", ""],
)
def test_other_tags_and_plain_text_hold_no_opener(text):
    assert tag_openers(text, NAMES) == []


def test_every_opener_before_a_name_is_found_at_its_index():
    assert tag_openers("a <<document> b </d\u043ecument>", NAMES) == [2, 3, 16]
    assert tag_openers("<div>", ["div"]) == [0]


def test_ingestion_normalises_each_document_the_same_way(tmp_path):
    assert (
        normalise("a\u200bb\u00adc \uff1c/document\uff1e \r\nnext\t\x07") == "abc </document>\nnext"
    )
    path = tmp_path / "page.md"
    path.write_text("# Title\n\nText.\n\n<\u200b/doc\u00adument>\n\n\uff21\uff22 \ufb01le\n")
    text = load_document(path, max_bytes=1_000_000).text
    assert "</document>" in text and "AB file" in text
    assert "\u200b" not in text and "\u00ad" not in text
