"""Model providers: factories that build embedding and chat models from settings.

Each provider (local, openai, fake) is declared once, in registry.py. Nothing here creates a
client at import time; each factory builds on first use and caches the result per process, so
`manage.py check` and the health endpoint never need a key or a model.
"""

from ragapp.providers.embeddings import (
    EmbeddingProvider,
    clear_embeddings_cache,
    get_embeddings,
)

__all__ = ["EmbeddingProvider", "clear_embeddings_cache", "get_embeddings"]
