"""Calls to the chat models: structured judgments (retried once) and free-text generation."""

from __future__ import annotations

import logging

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ValidationError

from ragapp.graph.context import Usage

logger = logging.getLogger(__name__)

STRUCTURED_ATTEMPTS = 2  # the first try and one retry


class JudgeError(Exception):
    """A model gave no valid structured output, even after the retry."""


def model_name(model: BaseChatModel) -> str:
    """The model's name as reported in metadata."""
    return (
        getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__
    )


def structured_call[T: BaseModel](
    model: BaseChatModel,
    schema: type[T],
    messages: list[BaseMessage],
    *,
    usage: Usage,
    method: str,
    task: str,
) -> T:
    """Ask `model` for a `schema` object at temperature 0; retry once on invalid output."""
    runnable = model.with_structured_output(schema, method=method, include_raw=True)
    problem: object = None
    for attempt in range(1, STRUCTURED_ATTEMPTS + 1):
        try:
            result = runnable.invoke(messages)
        except (OutputParserException, ValidationError, ValueError) as exc:
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
    raise JudgeError(f"{task}: the model returned invalid output twice ({problem})")


def text_call(model: BaseChatModel, messages: list[BaseMessage], *, usage: Usage) -> str:
    """Ask `model` for free text."""
    message = model.invoke(messages)
    usage.add(model_name(model), message)
    content = message.content
    if isinstance(content, list):  # some servers return content parts
        content = "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content).strip()
