"""Scripted fake models for graph tests; the knowledge base fixture is in tests/ragapp."""

import pytest

from ragapp.graph.context import ChatModels
from ragapp.providers.fake_chat import FakeChatModel, FakeScript


@pytest.fixture
def script():
    return FakeScript()


@pytest.fixture(params=["structured", "logprobs"])
def models(request, script):
    """Every graph test runs with both judge methods."""
    model = FakeChatModel(script=script)
    return ChatModels(
        generator=model,
        grader=model,
        broadener=model,
        relevance_method=request.param,
        faithfulness_method=request.param,
        names={"generation": "fake-chat", "grading": "fake-chat", "broadening": "fake-chat"},
    )


@pytest.fixture(autouse=True)
def plain_vector_retrieval(settings):
    """The graph's routes are tested over plain vector search; retrieval has tests of its own."""
    settings.RAG_RETRIEVAL_MODE = "vector"
    settings.RAG_MAX_CHUNKS_PER_DOCUMENT = 0
