"""LangSmith tracing only on purpose: langchain's switches count only with RAG_LANGSMITH_TRACING.

langchain and langgraph send every prompt, document and answer to LangSmith as soon as
`LANGSMITH_TRACING` (or its older names) is true in the environment, which a shell profile or a
copied `.env` can set without anyone deciding to ship the knowledge base to a third party. So
settings.py calls `guard_langsmith` at start-up: unless RAG_LANGSMITH_TRACING is true, those
variables are removed from this process's environment before any model is built.
"""

from __future__ import annotations

from collections.abc import MutableMapping

# What langsmith.utils.tracing_is_enabled reads: TRACING_V2, then TRACING, each under the
# LANGSMITH_ and then the LANGCHAIN_ prefix.
TRACING_VARIABLES = (
    "LANGSMITH_TRACING_V2",
    "LANGSMITH_TRACING",
    "LANGCHAIN_TRACING_V2",
    "LANGCHAIN_TRACING",
)


def guard_langsmith(*, allowed: bool, environ: MutableMapping[str, str]) -> list[str]:
    """Remove langchain's tracing switches from `environ` unless `allowed`; return those removed."""
    if allowed:
        return []
    removed = [name for name in TRACING_VARIABLES if environ.pop(name, None) is not None]
    if removed:
        # langsmith caches what it read; nothing should have read it yet, but be sure.
        from langsmith.utils import get_env_var

        get_env_var.cache_clear()
    return removed
