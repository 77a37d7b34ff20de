"""A deterministic chat model for tests: scripted judgments, no network, every route reachable.

It reads the same prompts the real models get (documents, question, draft answer) and answers
through the same LangChain interfaces (`invoke`, `with_structured_output(..., include_raw=True)`),
so the graph cannot tell it apart from a real model. Scripts decide the verdicts.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableLambda
from pydantic import BaseModel, ConfigDict

from ragapp.graph.prompts import HYPOTHESIS_TASK
from ragapp.graph.schemas import AnswerFaithfulness, DocumentRelevance
from ragapp.providers.registry import ModelStatus

# <document ...> but not <documents>, the block around them.
_DOC = re.compile(r"<document(?:\s[^>]*)?>\n(.*?)\n</document>", re.S)
_QUESTION = re.compile(r"^Question: (.*)$", re.M)
_ANSWER = re.compile(r"<answer>\n(.*?)\n</answer>", re.S)
_USER_ASKED = re.compile(r"^The user asked: (.*)$", re.M)
_QUERY_WAS = re.compile(r"^The search query was: (.*)$", re.M)
_FOLLOW_UP = re.compile(r"^Follow-up: (.*)$", re.M)
_EARLIER_QUESTION = re.compile(r"^Question \d+: (.*)$", re.M)
# The tails of the shared-prefix prompts: which document a verdict is about, which ones may be used.
_ABOUT = re.compile(r"Does document \[(\d+)\]")
_CLAIM = re.compile(r"^Claim: (.*)$", re.M)
_USABLE = re.compile(r"documents ((?:\[\d+\](?:, | and )?)+) \(the others")
_WORDS = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "the a an and or of to in on for is are how do does what which with can i my".split()
)


def word_overlap(question: str, text: str) -> float:
    """Share of the question's content words that occur in `text` (the default relevance)."""
    wanted = {w for w in _WORDS.findall(question.lower()) if w not in _STOP and len(w) > 2}
    if not wanted:
        return 0.0
    present = set(_WORDS.findall(text.lower()))
    return len(wanted & present) / len(wanted)


def _default_generate(question: str, docs: list[str]) -> str:
    first = docs[0].strip().splitlines()[-1] if docs else ""
    return f"According to the documentation, {first[:200]} [1]"


def _default_condense(earlier: list[str], followup: str) -> str:
    # Deterministic and good enough for retrieval by word overlap: the follow-up, then what the
    # last earlier question was about.
    return f"{followup} (about: {earlier[-1]})" if earlier else followup


def _default_broaden(original: str, query: str) -> str:
    words = [w for w in query.split() if not any(ch.isdigit() for ch in w)]
    return " ".join(words[:4]) if words else original


@dataclass
class FakeScript:
    """What the fake model answers. Each hook may be replaced by a test."""

    relevance: Callable[[str, str], float] = word_overlap  # (question, document) -> score
    faithfulness: Callable[[str, list[str]], float] = lambda answer, docs: 0.95
    generate: Callable[[str, list[str]], str] = _default_generate
    refine: Callable[[str, list[str]], str] = lambda answer, claims: answer + " (refined)"
    broaden: Callable[[str, str], str] = _default_broaden
    # (earlier questions, follow-up) -> standalone question; raise to fail the call
    condense: Callable[[list[str], str], str] = _default_condense
    # question -> the passage written for the search (RAG_HYDE); raise to fail the call
    hypothesize: Callable[[str], str] = lambda question: question
    risk: Callable[[float], str] | None = None  # score -> risk; None: derived from the score
    invalid_output_for: set[str] = field(default_factory=set)  # schema names answering garbage
    calls: list[str] = field(default_factory=list)  # task names, in call order
    answer_caps: list[int | None] = field(default_factory=list)  # max_tokens of each generate
    streamed: list[int] = field(default_factory=list)  # chunks each stream handed out, in order


class FakeChatModel(BaseChatModel):
    """The scripted model; `name` shows up in run metadata like a real model name."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    script: FakeScript
    model_name: str = "fake-chat"
    delay_s: float = 0.0  # pause before each reply (RAG_FAKE_CHAT_DELAY_MS)

    @property
    def _llm_type(self) -> str:
        return "fake-chat"

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs):
        prompt = messages[-1].content
        if self.delay_s:
            time.sleep(self.delay_s)
        if kwargs.get("logprobs"):
            return self._yes_no(prompt)
        schema = kwargs.get("judgment_schema")
        if schema is not None:  # from with_structured_output
            self.script.calls.append(schema.__name__)
            if schema.__name__ in self.script.invalid_output_for:
                text = "this is not JSON"
            else:
                text = self._judgment(schema, prompt).model_dump_json()
            return ChatResult(generations=[ChatGeneration(message=_message(prompt, text))])
        docs = _usable(prompt)
        answer = _ANSWER.search(prompt)
        if _FOLLOW_UP.search(prompt):  # condense: checked first, its turns hold <answer> tags
            self.script.calls.append("condense")
            text = self.script.condense(
                [q.strip() for q in _EARLIER_QUESTION.findall(prompt)], _first(_FOLLOW_UP, prompt)
            )
        elif prompt.startswith(HYPOTHESIS_TASK):  # the passage written for the first search
            self.script.calls.append("hypothesize")
            text = self.script.hypothesize(_first(_QUESTION, prompt))
        elif _USER_ASKED.search(prompt):  # broaden_query
            self.script.calls.append("broaden")
            text = self.script.broaden(_first(_USER_ASKED, prompt), _first(_QUERY_WAS, prompt))
        elif answer:  # refine_answer: the prompt carries the draft and the flagged claims
            self.script.calls.append("refine")
            claims = re.findall(r"^- (.*)$", prompt, re.M)
            text = self.script.refine(answer.group(1), claims)
        else:
            self.script.calls.append("generate")
            self.script.answer_caps.append(kwargs.get("max_tokens"))
            text = self.script.generate(_first(_QUESTION, prompt), docs)
            capped = _capped(text, kwargs.get("max_tokens"))
            if capped is not None:  # a word is a token here, as in the usage counts
                message = _message(prompt, capped, finish_reason="length")
                return ChatResult(generations=[ChatGeneration(message=message)])
        return ChatResult(generations=[ChatGeneration(message=_message(prompt, text))])

    def _stream(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs):
        """The reply `_generate` gives, a word a chunk as a server streams its tokens, then a
        last chunk with the finish reason and the usage. `script.streamed` counts the chunks the
        caller took: a caller that stops reading early leaves the rest unwritten."""
        message = self._generate(messages, stop, run_manager, **kwargs).generations[0].message
        self.script.streamed.append(0)
        for word in re.findall(r"\s*\S+", message.content):
            self.script.streamed[-1] += 1
            yield ChatGenerationChunk(message=AIMessageChunk(content=word))
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                response_metadata=message.response_metadata,
                usage_metadata=message.usage_metadata,
            )
        )

    def with_structured_output(self, schema, *, include_raw: bool = False, **kwargs: Any):
        """Answer with a `schema` instance computed by the script."""

        def parse(raw: AIMessage) -> Any:
            try:
                parsed = schema.model_validate_json(raw.content)
            except ValueError:
                return {"raw": raw, "parsed": None, "parsing_error": ValueError("not JSON")}
            return {"raw": raw, "parsed": parsed, "parsing_error": None} if include_raw else parsed

        # Through the model itself, as a real model's structured output is: callbacks (metrics,
        # traces) see the call and its usage like any other.
        return self.bind(judgment_schema=schema) | RunnableLambda(parse)

    def _yes_no(self, prompt: str) -> ChatResult:
        """A one-token yes/no reply with token probabilities, like an OpenAI-compatible server."""
        answer = _ANSWER.search(prompt)
        claim = _CLAIM.search(prompt)
        task = "AnswerFaithfulness" if answer or claim else "DocumentRelevance"
        self.script.calls.append(task)
        if task in self.script.invalid_output_for:
            message = _message(prompt, "maybe")
            message.response_metadata = {"logprobs": {"content": []}}
            return ChatResult(generations=[ChatGeneration(message=message)])
        if claim:  # one sentence of an answer, judged like a whole answer
            p = float(self.script.faithfulness(claim.group(1), _usable(prompt)))
        elif answer:
            p = float(self.script.faithfulness(answer.group(1), _usable(prompt)))
        else:
            p = float(self.script.relevance(_first(_QUESTION, prompt), _about(prompt)))
        p = min(max(p, 1e-6), 1 - 1e-6)
        top = [
            {"token": "yes", "logprob": math.log(p)},
            {"token": "no", "logprob": math.log(1 - p)},
        ]
        message = _message(prompt, "yes" if p >= 0.5 else "no")
        message.response_metadata = {
            "logprobs": {"content": [{"token": message.content, "top_logprobs": top}]}
        }
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _judgment(self, schema: type[BaseModel], prompt: str) -> BaseModel:
        if schema is DocumentRelevance:
            docs = _DOC.findall(prompt)
            score = float(self.script.relevance(_first(_QUESTION, prompt), docs[0] if docs else ""))
            relevant = score >= 0.5
            return DocumentRelevance(
                reasoning=f"word overlap judged {'relevant' if relevant else 'not relevant'}",
                relevant=relevant,
                score=max(0.0, min(1.0, score)),
            )
        if schema is AnswerFaithfulness:
            answer = _ANSWER.search(prompt)
            score = float(
                self.script.faithfulness(answer.group(1) if answer else "", _usable(prompt))
            )
            risk = "low" if score >= 0.8 else "medium" if score >= 0.5 else "high"
            if self.script.risk is not None:
                risk = self.script.risk(score)
            return AnswerFaithfulness(
                reasoning="scripted",
                problematic_claims=[] if risk == "low" else ["an unsupported claim"],
                faithfulness_score=max(0.0, min(1.0, score)),
                hallucination_risk=risk,
                refinement_suggestion="" if risk == "low" else "remove the unsupported claim",
            )
        raise TypeError(f"FakeChatModel has no script for {schema.__name__}")


def fake_chat_model(name: str) -> FakeChatModel:
    """The `fake` provider's model, with the default script.

    `name` is only a label in the run metadata: the model reports itself as `fake-chat`.
    """
    return FakeChatModel(script=FakeScript(), delay_s=settings.RAG_FAKE_CHAT_DELAY_MS / 1000)


def fake_chat_status(name: str) -> ModelStatus:
    """Always ready: nothing to install, load or reach."""
    return ModelStatus(ready=True, detail="Scripted test model.")


def _about(prompt: str) -> str:
    """The document a yes/no relevance prompt asks about (its [n]), or the only one."""
    docs = _DOC.findall(prompt)
    number = _ABOUT.search(prompt)
    index = int(number.group(1)) - 1 if number else 0
    return docs[index] if 0 <= index < len(docs) else ""


def _usable(prompt: str) -> list[str]:
    """The documents the prompt's tail allows: the ones it names, or all of them."""
    docs = _DOC.findall(prompt)
    named = _USABLE.search(prompt)
    if not named:
        return docs
    numbers = [int(n) for n in re.findall(r"\d+", named.group(1))]
    return [docs[n - 1] for n in numbers if 0 < n <= len(docs)]


def _first(pattern: re.Pattern, text: str) -> str:
    match = pattern.search(text)
    return match.group(1).strip() if match else ""


def _capped(text: str, max_tokens: int | None) -> str | None:
    """`text`'s first `max_tokens` words, as a server stops at its cap; None if it fits."""
    if not max_tokens or len(text.split()) <= max_tokens:
        return None
    return re.match(rf"(?:\s*\S+){{{max_tokens}}}", text).group(0)


def _message(prompt: str, text: str, finish_reason: str = "stop") -> AIMessage:
    tokens_in, tokens_out = len(prompt.split()), len(text.split())
    return AIMessage(
        content=text,
        response_metadata={"finish_reason": finish_reason},
        usage_metadata={
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
        },
    )
