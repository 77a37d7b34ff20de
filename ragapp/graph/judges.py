"""Calls to the chat models: judgments (two methods) and free-text generation.

Judgments come either as structured JSON (`structured`: schema-constrained, reasoning first,
retried once on invalid output) or from the next-token probabilities of a one-word yes/no
answer (`logprobs`: one output token, so fast on a CPU, and a calibrated score for free).
Both return the same schema objects, so the nodes do not care which method ran.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel, ValidationError

from ragapp.graph import prompts
from ragapp.graph.context import ChatModels, Usage
from ragapp.graph.grounding import MISSING, answer_claims, lexical_support, opening_claim
from ragapp.graph.schemas import AnswerFaithfulness, DocumentRelevance
from ragapp.graph.state import RetrievedDoc
from ragapp.providers.model_errors import (
    CallTimeout,
    explained_failures,
    loaded_sdk,
    without_retries,
)

logger = logging.getLogger(__name__)

STRUCTURED_ATTEMPTS = 2  # the first try and one retry


class JudgeError(Exception):
    """A model gave no valid structured output, even after the retry."""


def model_name(model: BaseChatModel) -> str:
    """The model's name as reported in metadata."""
    return (
        getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__
    )


# Grammar-constrained decoding (llama.cpp) enforces these; without them a small model can fill
# its whole token budget with "reasoning" and never close the JSON.
MAX_STRING_CHARS = 400
MAX_LIST_ITEMS = 5


def bounded_json_schema(schema: type[BaseModel]) -> dict:
    """`schema` as JSON schema with a length cap on every string and list."""
    spec = schema.model_json_schema()
    for prop in spec.get("properties", {}).values():
        if prop.get("type") == "string":
            prop.setdefault("maxLength", MAX_STRING_CHARS)
        if prop.get("type") == "array":
            prop.setdefault("maxItems", MAX_LIST_ITEMS)
            if prop.get("items", {}).get("type") == "string":
                prop["items"].setdefault("maxLength", MAX_STRING_CHARS // 2)
    return spec


def structured_call[T: BaseModel](
    model: BaseChatModel,
    schema: type[T],
    messages: list[BaseMessage],
    *,
    usage: Usage,
    method: str,
    task: str,
    bounded: bool = False,
) -> T:
    """Ask `model` for a `schema` object at temperature 0; retry once on invalid output.

    `bounded` sends a schema with length caps (for grammar-constrained local servers); the
    reply is validated against the Pydantic schema either way.
    """
    target = bounded_json_schema(schema) if bounded else schema
    runnable = model.with_structured_output(target, method=method, include_raw=True)
    problem: object = None
    for attempt in range(1, STRUCTURED_ATTEMPTS + 1):
        try:
            with explained_failures(model):  # retries spent: say why, never the key
                result = runnable.invoke(messages)
            if bounded and result.get("parsed") is not None:
                result["parsed"] = schema.model_validate(result["parsed"])
        except Exception as exc:
            if not _invalid_output(exc):
                raise
            # Some parsers raise instead of reporting `parsing_error`; it is the same failure.
            problem = exc
            logger.warning("%s: invalid structured output (attempt %d): %s", task, attempt, exc)
            continue
        raw = result.get("raw")
        if raw is not None:
            usage.add(model_name(model), raw)
        parsed = result.get("parsed")
        if parsed is not None:
            return parsed
        problem = result.get("parsing_error") or "no structured output"
        logger.warning("%s: invalid structured output (attempt %d): %s", task, attempt, problem)
    # Never a default verdict in its place: a grade nobody gave would be a lie in the trace.
    raise JudgeError(
        f"{task}: malformed structured output twice: neither reply of the model was a valid "
        f"{schema.__name__} ({describe_problem(problem)})"
    )


PROBLEM_CHARS = 300


def _invalid_output(exc: Exception) -> bool:
    """Whether `exc` says the reply was not the schema's JSON (a reason to ask once more).

    The SDK's cut-off reply (`LengthFinishReasonError`) is named through `loaded_sdk`: a process
    whose models are not OpenAI clients cannot raise it, and need not import the SDK to say so.
    """
    if isinstance(exc, OutputParserException | ValidationError | ValueError):
        return True
    sdk = loaded_sdk()
    return sdk is not None and isinstance(exc, sdk.LengthFinishReasonError)


def describe_problem(problem: object) -> str:
    """A one-line, bounded account of why a structured reply was rejected."""
    if isinstance(problem, OutputParserException) and isinstance(
        problem.__cause__, ValidationError
    ):
        problem = problem.__cause__
    if isinstance(problem, ValidationError):
        errors = problem.errors(include_url=False)
        text = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'reply'}: {error['msg']}"
            for error in errors[:4]
        )
        first = errors[0].get("input") if errors else None
        if isinstance(first, str) and first:
            text += f"; the reply began {first[:80]!r}"
    else:
        text = str(problem)
    text = " ".join(text.split())
    return text if len(text) <= PROBLEM_CHARS else text[: PROBLEM_CHARS - 1] + "…"


@dataclass(frozen=True)
class TextReply:
    text: str
    cut: bool  # the reply stopped at `max_tokens`, not where the model ended it
    stopped: bool = False  # `stop_when` ended the reply before the model did


def text_reply(
    model: BaseChatModel,
    messages: list[BaseMessage],
    *,
    usage: Usage,
    max_tokens: int | None = None,
    stop_when: Callable[[str], bool] | None = None,
    timeout: CallTimeout | None = None,
) -> TextReply:
    """Ask `model` for free text (at most `max_tokens` tokens, when given).

    With `stop_when`, the reply is streamed and read only until `stop_when(text so far)` holds:
    closing the stream closes the connection, and the server stops writing. With `timeout`,
    each attempt of this call waits at most that long, whatever the client's own timeout, and
    one whose `retried` is False makes a single attempt.
    """
    bound = {"max_tokens": max_tokens} if max_tokens else {}
    if timeout is not None:
        bound["timeout"] = timeout.seconds  # the openai SDK's per-request timeout
    caller = model if timeout is None or timeout.retried else without_retries(model)
    runnable = caller.bind(**bound) if bound else caller
    stopped = False
    with explained_failures(model, timeout):
        if stop_when is None:
            message = runnable.invoke(messages)
        else:
            message, stopped = _streamed(runnable, messages, stop_when)
    usage.add(model_name(model), message)
    # OpenAI-compatible servers say "length" when the reply ran into its max_tokens.
    cut = (message.response_metadata or {}).get("finish_reason") == "length"
    return TextReply(_text(message.content).strip(), cut, stopped)


def _text(content) -> str:
    if isinstance(content, list):  # some servers return content parts
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def _streamed(
    runnable, messages: list[BaseMessage], stop_when: Callable[[str], bool]
) -> tuple[AIMessage, bool]:
    """The streamed reply as one message, and whether `stop_when` ended it early.

    A reply ended early never gets the server's usage report, which comes with the last chunk:
    its output tokens are counted from the stream (llama.cpp and OpenAI send one token a chunk)
    and its prompt tokens are not known, so they count as 0.
    """
    message: AIMessage | None = None
    pieces = 0
    stream = runnable.stream(messages, stream_usage=True)
    try:
        for chunk in stream:
            message = chunk if message is None else message + chunk
            pieces += bool(chunk.content)
            if stop_when(_text(message.content)):
                text = _text(message.content)
                return AIMessage(
                    content=text,
                    response_metadata={"finish_reason": "stop_when"},
                    usage_metadata={
                        "input_tokens": 0,
                        "output_tokens": pieces,
                        "total_tokens": pieces,
                    },
                ), True
    finally:
        stream.close()  # ends the HTTP response: llama.cpp stops generating when it is closed
    return message if message is not None else AIMessage(content=""), False


def text_call(
    model: BaseChatModel,
    messages: list[BaseMessage],
    *,
    usage: Usage,
    max_tokens: int | None = None,
    timeout: CallTimeout | None = None,
) -> str:
    """Ask `model` for free text (at most `max_tokens` tokens, when given)."""
    return text_reply(model, messages, usage=usage, max_tokens=max_tokens, timeout=timeout).text


def yes_probability(model: BaseChatModel, messages: list[BaseMessage], *, usage: Usage) -> float:
    """P(yes) / (P(yes) + P(no)) for the model's first answer token."""
    with explained_failures(model):
        message = model.bind(logprobs=True, top_logprobs=10, max_tokens=1).invoke(messages)
    usage.add(model_name(model), message)
    content = (message.response_metadata.get("logprobs") or {}).get("content") or []
    if not content:
        raise JudgeError(
            "the model server returned no token probabilities; use the structured judge method"
        )
    p_yes = p_no = 0.0
    for candidate in content[0].get("top_logprobs", []):
        word = candidate["token"].strip().lower()
        if word == "yes":
            p_yes += math.exp(candidate["logprob"])
        elif word == "no":
            p_no += math.exp(candidate["logprob"])
    if p_yes + p_no < 1e-6:
        raise JudgeError("the model answered neither yes nor no")
    return p_yes / (p_yes + p_no)


def judge_relevance(
    models: ChatModels, question: str, docs: list[RetrievedDoc], number: int, *, usage: Usage
) -> DocumentRelevance:
    """How well document [`number`] of `docs` answers `question`, by the configured method.

    The yes/no judge reads all of `docs` (the shared prefix that generation reuses); the
    structured judge reads that one document, as the design article's grader does.
    """
    doc = docs[number - 1]
    if models.relevance_method == "logprobs":
        p = _with_retry(
            lambda: yes_probability(
                models.grader,
                prompts.relevance_yes_no_messages(question, docs, number),
                usage=usage,
            ),
            task="grade_docs",
        )
        return DocumentRelevance(
            reasoning=f"P(yes) = {p:.2f} from the grader's next-token probabilities",
            relevant=p >= 0.5,
            score=p,
        )
    return structured_call(
        models.grader,
        DocumentRelevance,
        prompts.grade_document_messages(question, doc),
        usage=usage,
        method=models.structured_method,
        task="grade_docs",
        bounded=models.bounded_schemas,
    )


def judge_faithfulness(
    models: ChatModels,
    question: str,
    answer: str,
    docs: list[RetrievedDoc],
    usable: list[int],
    *,
    usage: Usage,
    threshold: float = 0.5,
    memo: dict[str, float] | None = None,
) -> AnswerFaithfulness:
    """Whether documents `usable` of `docs` support every claim of `answer`, by the method set.

    `threshold` is the answer threshold in force; the claims method names the sentences under
    it as the problematic claims. `memo` keeps the claims method's verdicts by prompt, for the
    run's next check.
    """
    if models.faithfulness_method == "lexical":
        return lexical_verdict(question, answer, [docs[n - 1] for n in usable])
    if models.faithfulness_method == "claims":
        return claims_verdict(
            models, question, answer, docs, usable, usage=usage, threshold=threshold, memo=memo
        )
    if models.faithfulness_method == "logprobs":
        p = _with_retry(
            lambda: yes_probability(
                models.grader,
                prompts.faithful_yes_no_messages(question, answer, docs, usable),
                usage=usage,
            ),
            task="grade_answer",
        )
        risk = "low" if p >= 0.8 else "medium" if p >= 0.5 else "high"
        return AnswerFaithfulness(
            reasoning=f"P(yes) = {p:.2f} that the documents support every claim",
            problematic_claims=[],
            faithfulness_score=p,
            hallucination_risk=risk,
            refinement_suggestion=""
            if risk == "low"
            else "remove or qualify every claim the documents do not state",
        )
    return structured_call(
        models.grader,
        AnswerFaithfulness,
        prompts.grade_answer_messages(question, answer, docs, usable),
        usage=usage,
        method=models.structured_method,
        task="grade_answer",
        bounded=models.bounded_schemas,
    )


def support_text(doc: RetrievedDoc) -> str:
    """What of `doc` the lexical check may find an answer's words in.

    The generator was shown each document's source path and section too (prompts.py), and a
    page's own name is often only there ("NOTIFY > Parameters", "docs/configuration.md"). An
    excerpt may hold sentences of the document's other chunks (excerpts.py): they count too.
    """
    return f"{doc.source_path}\n{doc.heading_path}\n{doc.text}\n{doc.excerpt}"


def unsupported_specifics(question: str, answer: str, docs: list[RetrievedDoc]) -> list[str]:
    """The specifics of `answer` (settings, flags, numbers, paths) that no one of `docs` holds."""
    support = lexical_support(answer, [support_text(doc) for doc in docs], question=question)
    return list(support.unsupported)


def lexical_verdict(question: str, answer: str, docs: list[RetrievedDoc]) -> AnswerFaithfulness:
    """The faithfulness verdict of the deterministic check in `grounding` (no model call).

    The score is the share of the answer's words the documents contain, capped at 0.5 while any
    specific (a setting, flag, number, path) appears nowhere in them; those specifics are the
    problematic claims that refinement is asked to remove.
    """
    support = lexical_support(answer, [support_text(doc) for doc in docs], question=question)
    score = min(support.coverage, 0.5) if support.unsupported else support.coverage
    risk = "low" if score >= 0.8 else "medium" if score >= 0.5 else "high"
    claims = [f"{term}{MISSING}" for term in support.unsupported]
    return AnswerFaithfulness(
        reasoning=(
            f"{support.coverage:.0%} of the answer's words appear in the documents; "
            + (
                f"specifics not found in them: {', '.join(support.unsupported)}"
                if support.unsupported
                else "every specific (setting, flag, number, path) is found in them"
            )
        ),
        problematic_claims=claims[:10],
        faithfulness_score=round(score, 3),
        hallucination_risk=risk,
        refinement_suggestion="" if not claims else "remove the specifics the documents lack",
    )


def claims_verdict(
    models: ChatModels,
    question: str,
    answer: str,
    docs: list[RetrievedDoc],
    usable: list[int],
    *,
    usage: Usage,
    threshold: float = 0.5,
    memo: dict[str, float] | None = None,
) -> AnswerFaithfulness:
    """The lexical check as a veto, then the grader's P(yes) that the documents state each claim.

    A specific the documents lack fails the answer with no model call. Otherwise every sentence
    that states something is asked about on its own, as a short tail over the cached documents
    prefix (Self-RAG's IsSup): a correct paraphrase passes, and a sentence that reuses the
    documents' words to say something they do not is caught. The score is the weakest claim's.

    A claim whose prompt `memo` holds (the same sentence over the same documents, judged by an
    earlier check of the run) takes that verdict: after pruning, the sentences left were each
    judged already, and asking again only repeated the verdict, seconds later.
    """
    lexical = lexical_verdict(question, answer, [docs[n - 1] for n in usable])
    if lexical.problematic_claims:
        # A named specific that no document holds is an unsupported claim, whatever the model
        # would say of the sentence around it.
        return lexical.model_copy(update={"faithfulness_score": 0.0, "hallucination_risk": "high"})
    supports = []
    opening = opening_claim(answer)
    claims = answer_claims(answer)
    recalled = 0
    for claim in claims:
        messages = prompts.claim_support_messages(question, docs, claim, usable)
        key = "\n".join(str(message.content) for message in messages)
        p = memo.get(key) if memo is not None else None
        if p is None:
            p = _with_retry(
                lambda messages=messages: yes_probability(models.grader, messages, usage=usage),
                task="grade_answer",
            )
            if memo is not None:
                memo[key] = p
        else:
            recalled += 1
        supports.append((claim, p))
        if len(supports) == 1 and claim == opening and p < threshold:
            # Pruning leaves nothing of an answer whose opening the documents do not state
            # (grounding.prune): whatever the later claims score, none of it is shown, so they
            # are not asked about (about half a second each on two cores).
            break
    if not supports:
        return lexical  # nothing but code and headings: the specifics (all found) decide
    unjudged = len(claims) - len(supports)
    weakest = min(p for _, p in supports)
    # The sentences as written by `answer_claims`, so refinement can drop exactly them.
    doubtful = [claim for claim, p in supports if p < threshold]
    # Risk on the verdict's own scale, so that it agrees with the verdict: high exactly when a
    # claim is under the threshold (the answer is not shown as it is), medium when the grader
    # leaned to "no" on a claim it still let through, low when it leaned to "yes" on every one.
    # An answered run shown with a red "High risk" badge contradicted its own trace.
    risk = "high" if weakest < threshold else "medium" if weakest < 0.5 else "low"
    return AnswerFaithfulness(
        reasoning=(
            f"{lexical.reasoning}. Each claim, P(the documents state it): "
            + "; ".join(f"{p:.2f}" for _, p in supports)
            + (f"; the opening is not stated, the other {unjudged} not judged" if unjudged else "")
            + (f"; {recalled} of them as the run's earlier check judged them" if recalled else "")
        ),
        problematic_claims=doubtful,
        faithfulness_score=round(weakest, 3),
        hallucination_risk=risk,
        refinement_suggestion=""
        if not doubtful
        else "remove the claims the documents do not state",
    )


def _with_retry(call, *, task: str) -> float:
    problem: Exception | None = None
    for attempt in range(1, STRUCTURED_ATTEMPTS + 1):
        try:
            return call()
        except JudgeError as exc:
            problem = exc
            logger.warning("%s: no usable verdict (attempt %d): %s", task, attempt, exc)
    raise JudgeError(f"{task}: no usable verdict twice ({problem})")
