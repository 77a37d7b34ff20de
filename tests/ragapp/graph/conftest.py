"""A small knowledge base (fake embeddings) and scripted fake models for graph tests."""

import pytest

from ragapp.graph.context import ChatModels
from ragapp.models import Chunk, Document
from ragapp.providers.fake_chat import FakeChatModel, FakeScript
from ragapp.services import embedding_index_prepare

TEXTS = {
    "docs/alpha.md": [
        "Alpha release 2.3 setup: run the alpha installer with --prefix.",
        "Alpha configuration lives in alpha.toml next to the binary.",
    ],
    "docs/beta.md": [
        "Beta setup: the beta service starts with `beta serve` on port 9000.",
        "Beta logs rotate daily; keep seven days.",
    ],
    "docs/gamma.md": ["Gamma is the billing module; invoices are monthly."],
}


@pytest.fixture
def knowledge_base(db, fake_embeddings):
    embedding_index_prepare(embeddings=fake_embeddings)
    for path, texts in TEXTS.items():
        title = path.split("/")[1].removesuffix(".md").title()
        document = Document.objects.create(
            source_path=path, title=title, format="markdown", content_hash=path, size_bytes=1
        )
        for ordinal, text in enumerate(texts):
            Chunk.objects.create(
                document=document,
                ordinal=ordinal,
                text=text,
                heading_path=title,
                embedding=fake_embeddings.embed_query(f"{title}\n\n{text}"),
            )


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
