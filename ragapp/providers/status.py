"""What the configured providers are and whether they can serve, without building any client.

The health endpoint reports this; it must answer with no API key, no model file loaded and no
network, so everything here reads settings, package metadata and this process's caches only.
"""

from __future__ import annotations

from django.conf import settings

from ragapp.providers.model_files import ModelFileError, installed


def providers_status() -> dict:
    """The embedding and chat providers in use, each with `ready` and `loaded` flags."""
    return {"embedding": _embedding_status(), "chat": _chat_status()}


def _openai_configured() -> tuple[bool, str]:
    if settings.OPENAI_API_KEY or settings.OPENAI_BASE_URL:
        return True, ""
    return False, "Set OPENAI_API_KEY (or OPENAI_BASE_URL for a server that needs no key)."


def _embedding_status() -> dict:
    from ragapp.providers import embeddings

    provider = settings.RAG_EMBEDDING_PROVIDER
    loaded = provider in embeddings._cache
    if provider == "openai":
        ready, detail = _openai_configured()
        model = f"openai/{settings.RAG_OPENAI_EMBEDDING_MODEL}"
    elif provider == "local":
        from ragapp.providers import local_embeddings as local

        model = f"local/{local.LocalOnnxEmbeddings.model_name}"
        ready, detail = _packages_installed([local.MODEL_PACKAGE, local.TOKENIZER_PACKAGE])
    else:
        model, ready, detail = "fake/hashed-bow", True, "Deterministic test embeddings."
    return {
        "provider": provider,
        "model": model,
        "ready": ready,
        "loaded": loaded,
        "detail": detail,
    }


def _chat_status() -> dict:
    from ragapp.providers.chat import chat_model_names

    provider = settings.RAG_CHAT_PROVIDER
    names = chat_model_names()
    models = {}
    for name in dict.fromkeys(names.values()):  # each distinct model once, in job order
        if provider == "openai":
            ready, detail = _openai_configured()
            loaded = False
        elif provider == "local":
            ready, detail, loaded = _local_chat_status(name)
        else:
            ready, detail, loaded = True, "Scripted test model.", False
        models[name] = {"ready": ready, "loaded": loaded, "detail": detail}
    return {
        "provider": provider,
        "jobs": names,
        "models": models,
        "ready": all(m["ready"] for m in models.values()),
    }


def _local_chat_status(name: str) -> tuple[bool, str, bool]:
    from ragapp.providers import local_llm

    try:
        model = local_llm.packaged_model(name)
    except ModelFileError as exc:
        return False, str(exc), False
    ready, detail = _packages_installed(list(model.packages))
    loaded = name in local_llm._servers
    if ready and not loaded:
        detail = f"{model.description}: installed; llama.cpp loads it on the first run."
    elif loaded:
        detail = f"{model.description}: loaded in this process."
    return ready, detail, loaded


def _packages_installed(packages: list[str]) -> tuple[bool, str]:
    try:
        for package in packages:
            installed(package)
    except ModelFileError as exc:
        return False, str(exc)
    return True, ""
