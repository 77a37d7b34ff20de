"""RAG_HYDE: the first search is for the question and a passage the model writes to answer it."""

import pytest

from ragapp.graph.context import GraphLimits
from ragapp.models import QueryRun, TraceEvent
from ragapp.providers.fake_chat import FakeChatModel
from ragapp.runs.runner import execute_run
from ragapp.services import run_create
from tests.ragapp.graph.conftest import one_model_in_every_role

pytestmark = pytest.mark.django_db

# Worded as a user would: none of its words but "module" is on a page, so the question alone
# finds the wrong page. The passage, in the model's words, names what the beta page says.
QUESTION = "How do I launch the module that answers requests?"
PASSAGE = "To bring it up, run beta serve: the beta service then listens on port 9000."


def ask(question, models, history=None, **limits):
    run = run_create(query=question)
    limits = GraphLimits(**{"top_k": 1, **limits})
    execute_run(run, models=models, limits=limits, history=history)
    run.refresh_from_db()
    return run


def retrievals(run) -> list[dict]:
    events = TraceEvent.objects.filter(run=run, kind="retrieve").order_by("seq")
    return [event.payload for event in events]


def first_hit(run) -> str:
    return retrievals(run)[0]["documents"][0]["source_path"]


def test_the_first_search_is_for_the_question_and_the_written_passage(
    knowledge_base, models, script
):
    script.hypothesize = lambda question: PASSAGE
    without = ask(QUESTION, models)
    with_passage = ask(QUESTION, models, hyde=True)

    assert first_hit(without) != "docs/beta.md"  # the question alone misses the page
    assert first_hit(with_passage) == "docs/beta.md"
    retrieved = retrievals(with_passage)[0]
    assert retrieved["query"] == QUESTION  # the trace shows the question as the search's query
    assert retrieved["hypothesis"] == PASSAGE
    assert retrieved["hypothesis_problem"] == ""
    assert retrieved["hypothesis_ms"] >= 0
    assert "hypothesize" in with_passage.response_metadata["node_ms"]
    assert script.calls.count("hypothesize") == 1
    # Without the setting no passage is asked for, and the trace carries no such fields.
    assert "hypothesis" not in retrievals(without)[0]
    assert "hypothesize" not in without.response_metadata["node_ms"]
    # The run's metadata says which way it searched, so a stored run can be audited.
    assert with_passage.response_metadata["settings"]["hyde"] is True
    assert without.response_metadata["settings"]["hyde"] is False


def test_a_follow_up_gets_its_passage_for_the_standalone_question(knowledge_base, models, script):
    """The passage answers what `condense` made of the follow-up, not the words "and that one"."""
    asked: list[str] = []
    script.condense = lambda earlier, followup: QUESTION
    script.hypothesize = lambda question: asked.append(question) or PASSAGE
    earlier = [("Which modules are there?", "There is a beta service [1].")]
    run = ask("and how do I launch it?", models, history=earlier, hyde=True)

    assert asked == [QUESTION]
    retrieved = retrievals(run)[0]
    assert (retrieved["query"], retrieved["hypothesis"]) == (QUESTION, PASSAGE)
    assert retrieved["documents"][0]["source_path"] == "docs/beta.md"
    assert run.query == "and how do I launch it?"


class RecordingModel(FakeChatModel):
    """The fake model, keeping the last message of every prompt it is sent."""

    prompts: list[str] = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.prompts.append(messages[-1].content)
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.mark.parametrize("judge_method", ["structured", "logprobs"])
def test_the_passage_is_a_search_key_never_evidence(knowledge_base, script, judge_method):
    """No prompt after the passage's own (relevance, writing, the answer check) contains it."""
    script.hypothesize = lambda question: PASSAGE
    script.relevance = lambda question, doc: 0.9
    model = RecordingModel(script=script, prompts=[])
    run = ask(QUESTION, one_model_in_every_role(model, judge_method), hyde=True)

    assert run.status == QueryRun.Status.ANSWERED
    first, *later = model.prompts
    assert first.startswith("Write the two sentences")  # the request for the passage itself
    assert len(later) >= 3 and all(QUESTION in prompt for prompt in later)
    assert not any(PASSAGE in prompt or "run beta serve" in prompt for prompt in later)


def test_a_failed_passage_leaves_the_search_to_the_question(knowledge_base, models, script):
    def broken(question):
        raise RuntimeError("the model server at http://10.0.0.5:8080/v1 went away")

    script.hypothesize = broken
    failed = ask(QUESTION, models, hyde=True)
    plain = ask(QUESTION, models)

    retrieved = retrievals(failed)[0]
    assert retrieved["hypothesis"] == ""
    # What failed is said, where the server is not: the trace is the run owner's to read.
    assert "went away" in retrieved["hypothesis_problem"]
    assert "10.0.0.5" not in retrieved["hypothesis_problem"]
    assert retrieved["documents"] == retrievals(plain)[0]["documents"]
    assert failed.status in (QueryRun.Status.ANSWERED, QueryRun.Status.REFUSED)  # not failed


def test_an_empty_passage_is_said_so(knowledge_base, models, script):
    script.hypothesize = lambda question: " \n "
    retrieved = retrievals(ask(QUESTION, models, hyde=True))[0]

    assert retrieved["hypothesis"] == ""
    assert retrieved["hypothesis_problem"] == "the model wrote nothing"


def test_a_question_naming_what_no_chunk_holds_gets_no_passage(knowledge_base, models, script):
    script.hypothesize = lambda question: PASSAGE
    run = ask(
        "How do I start the beta service with --turbo-mode?",
        models,
        hyde=True,
        refuse_unknown_names=True,
    )

    assert "hypothesize" not in script.calls
    assert "hypothesis" not in retrievals(run)[0]
    assert run.status == QueryRun.Status.REFUSED


def test_only_the_first_retrieval_writes_a_passage(knowledge_base, models, script):
    script.hypothesize = lambda question: PASSAGE
    script.relevance = lambda question, doc: 0.0  # nothing passes: the query is broadened twice
    run = ask(QUESTION, models, hyde=True, max_retrievals=3)

    first, *later = retrievals(run)
    assert first["hypothesis"] == PASSAGE
    assert len(later) == 2 and all("hypothesis" not in payload for payload in later)
    assert script.calls.count("hypothesize") == 1
