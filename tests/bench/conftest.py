"""The ragapp fixtures a bench script's tests need: a small knowledge base, the fake models."""

from tests.ragapp.conftest import fake_chat, knowledge_base  # noqa: F401  (fixtures)
