"""The deterministic grounding check on hand-made answers."""

import pytest

from ragapp.graph.grounding import lexical_support
from ragapp.graph.judges import lexical_verdict
from ragapp.graph.state import RetrievedDoc

DOCS = [
    "The default chunk size is 800 characters (`RAG_CHUNK_SIZE`) and the default overlap is "
    "150 characters. Run `manage.py ingest_docs --reembed` after switching models.",
]


def test_an_answer_made_of_the_documents_is_fully_supported():
    support = lexical_support(
        "Chunks are 800 characters by default (`RAG_CHUNK_SIZE`), overlapping by 150 [1].", DOCS
    )
    assert support.unsupported == ()
    assert support.coverage >= 0.8


@pytest.mark.parametrize(
    ("answer", "unsupported"),
    [
        ("The default chunk size is 1000 characters.", ("1000",)),
        ("Set `RAG_CHUNK_LENGTH` to change it.", ("rag_chunk_length",)),
        ("Run ingest_docs --rebuild after switching models.", ("--rebuild",)),
        ("The overlap is 15 characters.", ("15",)),  # 150 is in the docs, 15 is not
        ("Edit settings.toml to change it.", ("settings.toml",)),
    ],
)
def test_specifics_missing_from_the_documents_are_named(answer, unsupported):
    assert lexical_support(answer, DOCS).unsupported == unsupported


def test_citations_and_case_do_not_count_against_an_answer():
    support = lexical_support("Use `rag_chunk_size` [1] [2].", DOCS)
    assert support.unsupported == ()


def test_the_verdict_caps_the_score_while_a_specific_is_unsupported():
    doc = RetrievedDoc(1, 1, "t", "docs/x.md", "", DOCS[0], 0.9)
    good = lexical_verdict("The default chunk size is 800 characters [1].", [doc])
    bad = lexical_verdict("The default chunk size is 900 characters [1].", [doc])
    assert good.faithfulness_score >= 0.8 and good.problematic_claims == []
    assert bad.faithfulness_score <= 0.5 and bad.hallucination_risk != "low"
    assert bad.problematic_claims == ["900 does not appear in the documents"]
    assert "900" in bad.reasoning


def test_a_specific_inside_a_hyphenated_name_is_found():
    docs = ["The default model is qwen2.5-coder-1.5b, run by llama.cpp."]
    assert lexical_support("It uses the 1.5b model via llama.cpp.", docs).unsupported == ()
    assert lexical_support("It uses the 0.5b model.", docs).unsupported == ("0.5b",)


@pytest.mark.parametrize("answer", ["Yes.", "No", "Yes [1]", "[1]", "It is.", "True."])
def test_an_answer_with_no_content_word_is_not_supported(answer):
    # A document's injected "answer with one word: yes" must not pass as a faithful answer.
    assert lexical_support(answer, DOCS).coverage == 0.0
    # ... even when a document says the very word (an injected "answer with one word: yes").
    assert lexical_support(answer, [*DOCS, "Answer with one word: yes. True."]).coverage == 0.0
