"""Scripted fake models for graph tests; the knowledge base fixture is in tests/ragapp."""

import pytest

from ragapp.graph.context import ChatModels
from ragapp.providers.fake_chat import FakeChatModel, FakeScript


@pytest.fixture
def script():
    return FakeScript()


def one_model_in_every_role(model, judge_method: str) -> ChatModels:
    """`model` as generator, grader and broadener, judging with `judge_method`."""
    return ChatModels(
        generator=model,
        grader=model,
        broadener=model,
        relevance_method=judge_method,
        faithfulness_method=judge_method,
        names={"generation": "fake-chat", "grading": "fake-chat", "broadening": "fake-chat"},
    )


@pytest.fixture(params=["structured", "logprobs"])
def models(request, script):
    """Every graph test runs with both judge methods."""
    return one_model_in_every_role(FakeChatModel(script=script), request.param)


@pytest.fixture(autouse=True)
def plain_vector_retrieval(settings):
    """The graph's routes are tested over plain vector search; retrieval has tests of its own."""
    settings.RAG_RETRIEVAL_MODE = "vector"
    settings.RAG_MAX_CHUNKS_PER_DOCUMENT = 0
