"""A passage written for the search (HyDE): the answer as the documentation might word it.

A support engineer asks in the words of the problem ("I don't want the interactive prompts for
country and common name"); a manual answers in its own ("-subj arg: sets the subject name for a
new request"). Neither the embedding nor BM25 bridges that gap, so the chunk that answers often
stays out of the first five even when its page is found. The generation model, asked to write
the documentation's answer, names the command, option or setting it expects, and often the right
one: searching with the question and that passage together ranks the answering chunk higher
(Gao et al., "Precise Zero-Shot Dense Retrieval without Relevance Labels", 2022). On OpenSSL's
golden set every expected fact was then in what the model reads for 26 of 40 answerable
questions against 19 (docs/evaluation.md, "A passage written for the search").

The passage is a search key and nothing more: no judge, writer or check ever reads it, nothing
of it is shown as an answer, and a wrong guess costs only a worse ranking. (The hits'
similarity, which the relevance pre-filter reads, is to the search text, passage included.) The
trace records it, so the search can be audited. The question stays first in the search text, so
that what it names exactly still counts.
"""

from __future__ import annotations

import logging

from langchain_core.language_models import BaseChatModel

from ragapp.graph import prompts
from ragapp.graph.context import Usage
from ragapp.graph.judges import describe_problem, text_call
from ragapp.providers.model_errors import CallTimeout
from ragapp.trace.redaction import public_message

logger = logging.getLogger(__name__)

# About two sentences: a longer passage adds the model's own words faster than the names that
# find the chunk. A reply cut here is still a search key.
HYPOTHESIS_MAX_TOKENS = 70
# The passage is asked for once, not retried (RAG_LLM_MAX_RETRIES is for the calls a run needs),
# and waits at most this long (or RAG_LLM_TIMEOUT, if shorter), against RAG_LLM_TIMEOUT's 120 s
# for `local`. The packaged 1.5B model writes one in about 2 s at the median on two cores, but
# the server has one slot: with two runs at once (RAG_MAX_CONCURRENT_RUNS) the passage may wait
# behind the other run's whole answer (9 s at p95 quiet, 38 s seen on a loaded machine). A limit
# that fired in that queue would lose the passage, so it covers one queued answer with room.
HYPOTHESIS_TIMEOUT_S = 60.0


def write_hypothesis(model: BaseChatModel, question: str, *, usage: Usage) -> tuple[str, str]:
    """The passage `model` writes to answer `question`, and why there is none ("" if there is).

    Any failure of the call leaves the search to the question alone: the run goes on. The one
    attempt is cut at `HYPOTHESIS_TIMEOUT_S`, so a stalled server holds the run here for a minute
    at most, where a call with the client's limit and retries could hold it for (1 +
    RAG_LLM_MAX_RETRIES) * RAG_LLM_TIMEOUT, 8 minutes with the `local` defaults.
    """
    try:
        passage = text_call(
            model,
            prompts.hypothesis_messages(question),
            usage=usage,
            max_tokens=HYPOTHESIS_MAX_TOKENS,
            timeout=_timeout(model),
        )
    except Exception as exc:  # a search key is never worth failing a run for
        logger.warning("no passage for the search, the question is searched alone: %s", exc)
        # The trace is read by the run's owner: no server address or path in it (redaction.py).
        return "", f"the model failed ({public_message(describe_problem(exc))})"
    return (passage, "") if passage.strip() else ("", "the model wrote nothing")


def _timeout(model: BaseChatModel) -> CallTimeout:
    client_timeout = getattr(model, "request_timeout", None)  # RAG_LLM_TIMEOUT, OpenAI clients
    if isinstance(client_timeout, int | float) and client_timeout <= HYPOTHESIS_TIMEOUT_S:
        return CallTimeout(client_timeout, "RAG_LLM_TIMEOUT", retried=False)
    return CallTimeout(HYPOTHESIS_TIMEOUT_S, "the passage's own limit", retried=False)


def search_text(question: str, passage: str) -> str:
    """What the first retrieval searches for: the question, then the written passage if any."""
    return f"{question}\n{passage}" if passage else question
