"""The model providers, each declared once: what builds it, what checks it, what it defaults to.

`RAG_EMBEDDING_PROVIDER` and `RAG_CHAT_PROVIDER` name an entry of `PROVIDERS`. settings.py
validates both names against it and takes its provider-dependent defaults from it; `get_embeddings`,
`get_chat_models` and `providers_status` look the entry up instead of branching on the name. A new
provider is one entry here, plus the module its dotted paths name.

Builders and checks are dotted paths, imported with `import_string` only when that provider is
used, so llama.cpp and onnxruntime load only in processes that need them. For the same reason this
module imports nothing but the standard library and Django's exceptions: settings.py imports it
before Django, or any model, is set up.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True)
class ModelStatus:
    """Whether a chat model can serve, found without building it (the health endpoint shows it)."""

    ready: bool
    detail: str = ""
    loaded: bool = False  # already built in this process


@dataclass(frozen=True)
class EmbeddingStatus:
    """Whether the embedding model can serve, found without building it."""

    model: str  # `provider/model`, as the health endpoint shows it
    ready: bool
    detail: str = ""


@dataclass(frozen=True)
class EmbeddingsDeclaration:
    """How a provider embeds, and the settings it defaults."""

    build: str  # dotted path: () -> EmbeddingProvider, configured from settings
    status: str  # dotted path: () -> EmbeddingStatus, building nothing
    batch_size: int  # default RAG_EMBEDDING_BATCH_SIZE
    relevance_prefilter: float  # default RAG_RELEVANCE_PREFILTER (0: off)


@dataclass(frozen=True)
class ChatDeclaration:
    """How a provider chats, and the settings it defaults."""

    build: str  # dotted path: (model name) -> BaseChatModel, configured from settings
    status: str  # dotted path: (model name) -> ModelStatus, building nothing
    generation_model: str  # default RAG_GENERATION_MODEL
    grader_model: str  # default RAG_GRADER_MODEL (and so RAG_BROADEN_MODEL)
    relevance_judge: str  # default RAG_RELEVANCE_JUDGE
    faithfulness_judge: str  # default RAG_FAITHFULNESS_JUDGE
    timeout_s: float  # default RAG_LLM_TIMEOUT
    risk_veto: bool  # default RAG_FAITHFULNESS_RISK_VETO
    # dotted path like `build`, for the client of the grading job when the provider serves
    # reading and judging apart from writing; "" means `build` for every job.
    build_reader: str = ""
    bounded_schemas: bool = False  # cap string and list lengths in structured-output schemas
    one_model_for_every_job: bool = False  # build one model, whatever each job's name
    runs_locally: bool = False  # no per-token price: a run costs $0 (ragapp/pricing.py)
    # default RAG_EXCERPT_CHARS: cut every retrieved chunk but the first to the parts closest to
    # the question (graph/excerpts.py); 0 shows whole chunks.
    excerpt_chars: int = 0
    answer_max_tokens: int = 0  # default RAG_ANSWER_MAX_TOKENS (0: the model's own cap)
    refuse_unknown_names: bool = False  # default RAG_REFUSE_UNKNOWN_NAMES
    # default RAG_MAX_RETRIEVALS: the seed's three retrievals (two broadened searches) when too
    # few chunks pass grading.
    max_retrievals: int = 3
    # default RAG_HYDE: search with the question and a passage the model writes for it
    # (graph/hypothesis.py); off in the seed's design.
    hyde: bool = False
    # default RAG_READ_ON: a refused answer is written once more from this many of the found
    # pages' chunks the writer did not read (graph/nodes.read_on); 0, off in the seed's design.
    read_on: int = 0


@dataclass(frozen=True)
class Provider:
    """One provider: its embeddings and its chat models."""

    name: str
    embeddings: EmbeddingsDeclaration
    chat: ChatDeclaration


# In the order settings' error messages list them.
PROVIDERS: dict[str, Provider] = {
    provider.name: provider
    for provider in (
        Provider(
            name="local",
            embeddings=EmbeddingsDeclaration(
                build="ragapp.providers.local_embeddings.build_local_embeddings",
                status="ragapp.providers.local_embeddings.local_embeddings_status",
                # Small batches are fastest on the CPU: attention cost grows with padded length.
                batch_size=8,
                # For the packaged MiniLM, 0.25 lost no chunk of an expected source on either
                # golden set (the lowest was 0.255); other models have other scales.
                relevance_prefilter=0.25,
            ),
            chat=ChatDeclaration(
                build="ragapp.providers.local_llm.local_chat_model",
                build_reader="ragapp.providers.local_llm.local_reader_chat_model",
                status="ragapp.providers.local_llm.local_chat_status",
                generation_model="qwen2.5-coder-1.5b",
                grader_model="qwen2.5-coder-1.5b",
                # Measured on the packaged 1.5B model (docs/models.md): for relevance, logprobs
                # was as accurate as structured and twice as fast.
                relevance_judge="logprobs",
                # The lexical check of specifics as a veto, then the 1.5B model's P(yes) that the
                # documents state each claim, as a short tail over the cached documents. The
                # lexical check alone passed most subtly wrong answers; the 1.5B model as a
                # structured judge refused correct ones (docs/graph.md, bench/judges.py).
                faithfulness_judge="claims",
                timeout_s=120.0,  # a long reply of a 1.5B model on a small CPU takes a while
                # The 1.5B judge answered "high" risk on 12 of 14 answers, even with score 1.0
                # (docs/evaluation.md): only the score decides.
                risk_veto=False,
                # llama.cpp constrains decoding to the schema, so length caps in it bound the
                # reply: a small model cannot spend its whole budget on "reasoning".
                bounded_schemas=True,
                runs_locally=True,
                # Reading the documents is most of a local run. The first chunk is shown whole
                # with an excerpt of its document's next-best chunk, the others as 300-character
                # excerpts of their chunk and its next-best: the model reads 0.70-0.72 of the
                # characters of five whole chunks, and every expected fact was shown for 43 of
                # this documentation's 56 questions and 96 of the PostgreSQL manual's 132 (41 and
                # 95 with 400 and no companions; docs/evaluation.md, "Companions: what the model
                # reads").
                excerpt_chars=300,
                # The answers asked for are concise (about 72 tokens at the median); a 1.5B model
                # at temperature 0 sometimes loops until its cap, at 14-30 tokens a second. 160
                # would cut the slowest runs, but the answer check then passed more wrong answers
                # than right ones (docs/evaluation.md, "Measured and not adopted: the answer's
                # cap at 160 tokens").
                answer_max_tokens=320,
                # A small model answers a question about a name the documentation never
                # mentions from passages about something near it; the name's absence is the
                # answer (retrieval/coverage.py, docs/graph.md "Names the knowledge base never
                # mentions").
                refuse_unknown_names=True,
                # One retrieval, no broadened search. Over 25 runs that broadened on five golden
                # sets, none ended answered: a 1.5B judge that passes nothing in the best five
                # chunks passes nothing in a broader search's either, and each broadened search
                # cost about 11 s (docs/evaluation.md, "One retrieval for the local model").
                max_retrievals=1,
                # The first search is for the question and a passage the 1.5B model writes to
                # answer it, in the documentation's words (HyDE): the chunk that holds the
                # answer is found far more often, for about 1.8 s of writing. Every expected fact
                # was then in what the model reads for 26 of OpenSSL's 40 answerable questions
                # against 19, and 98 of the PostgreSQL manual's 132 against 93 (docs/evaluation.md,
                # "A passage written for the search").
                hyde=True,
                # +4 right answers on the tuning sets' refused runs, no unanswerable question
                # answered (docs/evaluation.md, stop 69).
                read_on=4,
            ),
        ),
        Provider(
            name="openai",
            embeddings=EmbeddingsDeclaration(
                build="ragapp.providers.openai_embeddings.build_openai_embeddings",
                status="ragapp.providers.openai_embeddings.openai_embeddings_status",
                batch_size=256,  # remote servers want few, large requests
                relevance_prefilter=0.0,
            ),
            chat=ChatDeclaration(
                build="ragapp.providers.openai_chat.openai_chat_model",
                status="ragapp.providers.openai_chat.openai_chat_status",
                generation_model="gpt-4o",
                grader_model="gpt-4o-mini",
                # A capable model judges best with its reasoning written out, and names the
                # unsupported claims that refinement and refusals need.
                relevance_judge="structured",
                faithfulness_judge="structured",
                timeout_s=60.0,
                risk_veto=True,
            ),
        ),
        Provider(
            name="fake",
            embeddings=EmbeddingsDeclaration(
                build="ragapp.providers.fake_embeddings.FakeEmbeddings",
                status="ragapp.providers.fake_embeddings.fake_embeddings_status",
                batch_size=256,
                relevance_prefilter=0.0,
            ),
            chat=ChatDeclaration(
                build="ragapp.providers.fake_chat.fake_chat_model",
                status="ragapp.providers.fake_chat.fake_chat_status",
                generation_model="fake-chat",
                grader_model="fake-chat",
                relevance_judge="structured",
                faithfulness_judge="structured",
                timeout_s=60.0,
                risk_veto=True,
                # One scripted model answers every job, so a script sees each call, in order.
                one_model_for_every_job=True,
                runs_locally=True,
            ),
        ),
    )
}


def provider_names() -> tuple[str, ...]:
    """The registered provider names, in declaration order."""
    return tuple(PROVIDERS)


def get_provider(name: str, *, setting: str) -> Provider:
    """The provider called `name`, the value of `setting`; ImproperlyConfigured if unknown."""
    try:
        return PROVIDERS[name]
    except KeyError:
        raise ImproperlyConfigured(f"Unknown {setting} {name!r}") from None
