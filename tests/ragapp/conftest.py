"""Fixtures shared by the ragapp tests: a small knowledge base (fake embeddings), a live server."""

import pytest
from django.core.cache import cache

from ragapp.models import Chunk, Document
from ragapp.providers.chat import clear_chat_models_cache
from ragapp.services import embedding_index_prepare
from tests.ragapp.factories import user_with_password
from tests.ragapp.live_server import server  # noqa: F401  (a fixture)

PASSWORD = "pw-tests-123"


@pytest.fixture
def users(django_user_model):
    """An owner, another user and a staff user, all with PASSWORD."""

    def make(username, **extra):
        return user_with_password(django_user_model, username, PASSWORD, **extra)

    return {"owner": make("owner"), "other": make("other"), "staff": make("staff", is_staff=True)}


@pytest.fixture
def vector(fake_embeddings):
    """A chunk vector the chunk column takes, whatever width an earlier test left it at.

    A transactional test's index switch (a column of another width) is not rolled back.
    """
    embedding_index_prepare(embeddings=fake_embeddings)
    return fake_embeddings.embed_query("a chunk")


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
def fake_chat(settings):
    """The scripted fake chat model, built fresh for the test, with its scripted faithfulness judge.

    The faithfulness settings derived from the provider at start-up (the local defaults, as no
    key is set in tests) are put back to what RAG_CHAT_PROVIDER=fake gives a fresh process.
    """
    settings.RAG_CHAT_PROVIDER = "fake"
    settings.RAG_FAITHFULNESS_JUDGE = "structured"
    settings.RAG_ANSWER_CONFIDENCE_THRESHOLD = 0.80
    settings.RAG_FAITHFULNESS_RISK_VETO = True
    settings.RAG_EXCERPT_CHARS = 0
    settings.RAG_ANSWER_MAX_TOKENS = 0
    settings.RAG_REFUSE_UNKNOWN_NAMES = False
    settings.RAG_MAX_RETRIEVALS = 3
    settings.RAG_HYDE = False
    settings.RAG_READ_ON = 0
    clear_chat_models_cache()
    yield
    clear_chat_models_cache()


@pytest.fixture(autouse=True)
def roomy_submission_limits(settings):
    """Tests that start many runs as one user are not about the limits on doing so.

    In most tests a submitted run is never executed, so it stays queued and would count against
    RAG_MAX_ACTIVE_RUNS_PER_USER; tests/ragapp/runs/test_submit.py sets the limits it tests.
    """
    settings.RAG_MAX_ACTIVE_RUNS_PER_USER = 1000
    settings.RAG_MAX_QUEUED_RUNS = 1000


@pytest.fixture
def fresh_cache():
    """An empty default cache (rate-limit counts, cached health figures) before and after."""
    cache.clear()
    yield
    cache.clear()
