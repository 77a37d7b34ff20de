"""The routers alone: every ending of the graph, decided without any model."""

import pytest

from ragapp.graph.context import GraphLimits
from ragapp.graph.routes import (
    after_generate,
    after_grade_answer,
    after_grade_docs,
    after_read_on,
    after_refine,
)
from ragapp.graph.state import AnswerGrade, RetrievedDoc

LIMITS = GraphLimits()
DOC = RetrievedDoc(1, 1, "T", "docs/t.md", "T", "text", 0.9)


def grade(faithful: bool) -> AnswerGrade:
    return AnswerGrade(
        0.9 if faithful else 0.3, "low" if faithful else "high", [], "", "", faithful
    )


def test_enough_relevant_documents_go_straight_to_generate():
    assert after_grade_docs({"filtered_documents": [DOC], "iteration_count": 1}, LIMITS) == (
        "generate"
    )


@pytest.mark.parametrize("iteration", [1, 2])
def test_too_few_relevant_documents_broaden_before_the_last_retrieval(iteration):
    state = {"filtered_documents": [], "iteration_count": iteration}
    assert after_grade_docs(state, LIMITS) == "broaden_query"


def test_the_third_retrieval_forces_generate_even_with_nothing_relevant():
    assert after_grade_docs({"filtered_documents": [], "iteration_count": 3}, LIMITS) == "generate"


def test_a_single_allowed_retrieval_is_the_last_one():
    state = {"filtered_documents": [], "iteration_count": 1}
    assert after_grade_docs(state, GraphLimits(max_retrievals=1)) == "generate"


def test_min_relevant_docs_is_respected():
    limits = GraphLimits(min_relevant_docs=2)
    state = {"filtered_documents": [DOC], "iteration_count": 1}
    assert after_grade_docs(state, limits) == "broaden_query"


def test_the_fallback_is_never_graded():
    assert after_generate({"fallback": True}) == "end"
    assert after_generate({"fallback": False}) == "grade_answer"


def test_a_faithful_answer_is_answered():
    assert after_grade_answer({"answer_grade": grade(True), "correction_count": 0}, LIMITS) == (
        "answered"
    )


def test_an_unfaithful_answer_is_refined_once():
    state = {"answer_grade": grade(False), "correction_count": 0}
    assert after_grade_answer(state, LIMITS) == "refine_answer"


def test_faithful_after_refinement_is_answered():
    state = {"answer_grade": grade(True), "correction_count": 1}
    assert after_grade_answer(state, LIMITS) == "answered"


def test_still_unfaithful_after_the_one_refinement_is_refused():
    state = {"answer_grade": grade(False), "correction_count": 1}
    assert after_grade_answer(state, LIMITS) == "refused"


def test_a_revised_answer_is_checked_again():
    assert after_refine({"unrevised": False}, LIMITS) == "grade_answer"
    assert after_refine({}, LIMITS) == "grade_answer"  # a state from before the flag existed


def test_an_answer_the_refinement_left_as_it_was_is_refused_without_a_second_check():
    assert after_refine({"unrevised": True}, LIMITS) == "refused"


READ_ON = GraphLimits(read_on=4)


def declined() -> AnswerGrade:
    return AnswerGrade(1.0, "low", [], "", "", False, declined=True)


def test_a_refused_answer_reads_on_once_after_a_relevant_retrieval():
    refused = {"answer_grade": grade(False), "correction_count": 1, "filtered_documents": [DOC]}
    assert after_grade_answer(refused, READ_ON) == "read_on"
    assert after_grade_answer({**refused, "answer_grade": declined()}, READ_ON) == "read_on"
    assert after_refine({**refused, "unrevised": True}, READ_ON) == "read_on"
    # Once only; never after a doubtful retrieval, or a question naming what no chunk holds;
    # never when RAG_READ_ON is 0.
    for state, limits in [
        ({**refused, "read_on_done": True}, READ_ON),
        ({**refused, "doubtful_retrieval": True}, READ_ON),
        ({**refused, "unknown_names": ["helm"]}, READ_ON),
        ({**refused, "filtered_documents": []}, READ_ON),
        (refused, LIMITS),
    ]:
        assert after_grade_answer(state, limits) == "refused"
        assert after_refine({**state, "unrevised": True}, limits) == "refused"


def test_the_second_answer_gets_its_own_refinement():
    second = {
        "answer_grade": grade(False),
        "correction_count": 1,
        "refinements_before_read_on": 1,
        "read_on_done": True,
        "filtered_documents": [DOC],
    }
    assert after_grade_answer(second, READ_ON) == "refine_answer"
    assert after_grade_answer({**second, "correction_count": 2}, READ_ON) == "refused"


def test_a_second_read_that_found_nothing_leaves_the_refusal():
    assert after_read_on({"answer_grade": None}) == "generate"
    assert after_read_on({"answer_grade": grade(False)}) == "refused"
