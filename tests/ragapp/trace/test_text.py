"""The one-line trace text of `manage.py ask` and the admin."""

from ragapp.trace.text import describe

RETRIEVE = {"iteration": 1, "docs_found": 5, "query": "backups?", "mode": "hybrid"}


def test_a_retrieval_says_how_many_documents_the_model_saw_as_excerpts():
    line = describe("retrieve", {**RETRIEVE, "excerpted": 4, "duration_ms": 12.0})
    assert line == (
        "retrieve #1: 5 documents for 'backups?' by hybrid search, 4 shown to the model as "
        "excerpts (12 ms)"
    )


def test_a_retrieval_without_excerpts_or_from_an_older_run_does_not_mention_them():
    plain = "retrieve #1: 5 documents for 'backups?' by hybrid search"
    assert describe("retrieve", {**RETRIEVE, "excerpted": 0}) == plain
    assert describe("retrieve", RETRIEVE) == plain


def test_a_retrieval_shows_the_passage_it_searched_with_or_why_there_was_none():
    written = {"hypothesis": "Use `pg_dump`.", "hypothesis_ms": 1150.4, "hypothesis_problem": ""}
    assert describe("retrieve", {**RETRIEVE, **written, "duration_ms": 12.0}) == (
        "retrieve #1: 5 documents for 'backups?' by hybrid search; searched with a passage the "
        "model wrote for it in 1150 ms: 'Use `pg_dump`.' (12 ms)"
    )
    failed = {"hypothesis": "", "hypothesis_problem": "the model wrote nothing"}
    assert describe("retrieve", {**RETRIEVE, **failed}).endswith(
        "by hybrid search; no passage written for the search (the model wrote nothing)"
    )


def test_a_second_read_of_the_found_pages_says_so():
    line = describe("retrieve", {**RETRIEVE, "docs_found": 4, "read_on": True, "duration_ms": 9.0})
    assert line == "read on: 4 more chunks of the pages found, after the answer was refused (9 ms)"
    one = describe("retrieve", {**RETRIEVE, "docs_found": 1, "read_on": True})
    assert one == "read on: 1 more chunk of the pages found, after the answer was refused"


GRADE = {"index": 2, "total": 5, "passed": True, "document": {"source_path": "a.md"}}


def test_a_grade_says_its_relevance_or_that_the_judge_was_not_asked():
    assert "... relevance 0.42, kept" in describe("grade", {**GRADE, "score": 0.42})
    assert "... not asked, kept" in describe("grade", {**GRADE, "score": None})


def test_a_question_naming_what_no_document_mentions_says_so_in_its_trace():
    line = describe("retrieve", {**RETRIEVE, "unknown_names": ["QUIC", "-grade"]})
    assert line.endswith("by hybrid search; no document mentions QUIC, -grade")
    reason = "not asked: the question names QUIC, which no document in the knowledge base mentions"
    grade = describe("grade", {**GRADE, "score": None, "passed": False, "reasoning": reason})
    assert f"... {reason}, filtered out - a.md" in grade


CHECK = {"faithful": True, "faithfulness_score": 0.61, "hallucination_risk": "low"}


def test_an_answer_check_names_the_passages_it_added_from_the_same_pages():
    added = {"source_path": "openssl-x509.html", "heading_path": "OPTIONS > Micro-CA Options"}
    line = describe("grade_answer", {**CHECK, "supporting_documents": [added]})
    assert line == (
        "faithfulness 0.61, risk low: faithful; read with passages from the same pages: "
        "openssl-x509.html > OPTIONS > Micro-CA Options"
    )
    plain = "faithfulness 0.61, risk low: faithful"
    assert describe("grade_answer", {**CHECK, "supporting_documents": []}) == plain
    assert describe("grade_answer", CHECK) == plain  # an event stored before the lookup


def test_a_refinement_that_left_nothing_new_says_the_run_was_not_checked_again():
    refine = {"problematic_claims": ["Beta logs rotate hourly."], "before_chars": 40}
    assert describe("refine", {**refine, "after_chars": 25, "unrevised": False}) == (
        "refined the answer to drop 1 claim(s)"
    )
    assert describe("refine", {**refine, "after_chars": 0, "unrevised": True}) == (
        "refined the answer to drop 1 claim(s): nothing new was left to check, so it is refused "
        "without a second check"
    )
    # An event stored before the flag existed reads as before.
    assert describe("refine", {**refine, "after_chars": 25}) == (
        "refined the answer to drop 1 claim(s)"
    )


def test_a_doubtful_retrieval_and_a_doubted_opening_are_said():
    grade_docs = {"passed": 5, "total": 5, "kept_overall": 5, "duration_ms": 900}
    assert describe("grade_docs", grade_docs) == "5 of 5 documents passed (900 ms)"
    assert describe("grade_docs", {**grade_docs, "doubtful": True}) == (
        "5 of 5 documents passed as doubtful, so the answer is held to a stricter check (900 ms)"
    )
    generate = {"fallback": False, "sources": [{}, {}], "duration_ms": 2000}
    assert describe("generate", generate) == "generated an answer from 2 documents (2000 ms)"
    assert describe("generate", {**generate, "opening_doubted": True}) == (
        "generated an answer from 2 documents, stopped at its opening claim, which the check "
        "doubted (2000 ms)"
    )
