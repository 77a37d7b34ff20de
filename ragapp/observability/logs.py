"""Log lines that say which run, user and graph node they came from, and never carry a secret.

`run_context` and `node_context` set context variables; the formatters read them at format
time, so every line logged while a run executes (by our code, LangChain, httpx or Django) carries
them, on the run's own thread and on the threads it fans out to (the graph copies its context
into its worker threads). `RAG_LOG_FORMAT=json` gives one JSON object per line; the default is
readable text. Both formatters scrub secrets from the finished line, traceback included.
"""

from __future__ import annotations

import json
import logging
import os
import re
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime

from opentelemetry import trace

_run_id: ContextVar[str | None] = ContextVar("rag_run_id", default=None)
_user_id: ContextVar[int | None] = ContextVar("rag_user_id", default=None)
_node: ContextVar[str | None] = ContextVar("rag_node", default=None)

REDACTED = "[redacted]"
# Secrets by their shape, whatever their value: a password in a URL, a bearer token, an API key
# in OpenAI's or LangSmith's format, and `password=...`-like pairs in messages and reprs.
_PATTERNS = (
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]*:)[^\s@/]+@"), rf"\1{REDACTED}@"),
    (re.compile(r"(?i)\b(bearer|token)\s+[A-Za-z0-9._~+/=-]{8,}"), rf"\1 {REDACTED}"),
    (re.compile(r"\b(sk|lsv2)-[A-Za-z0-9_\-]{6,}"), REDACTED),
    (
        re.compile(
            r"(?i)((?:password|passwd|secret|api[_-]?key|token|authorization)['\"]?\s*[:=]\s*)"
            r"(['\"]?)[^\s'\",}]+"
        ),
        rf"\1\2{REDACTED}",
    ),
)
# Environment variables whose values are secrets, beyond the settings `configured_secrets` reads.
_SECRET_ENVIRONMENT = (
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
)
_MIN_SECRET_CHARS = 4  # shorter values would scrub ordinary words


@contextmanager
def run_context(*, run_id, user_id):
    """Within the block, every log line carries this run's id and its owner's id."""
    tokens = (_run_id.set(str(run_id)), _user_id.set(user_id))
    try:
        yield
    finally:
        _run_id.reset(tokens[0])
        _user_id.reset(tokens[1])


def set_node(node: str | None):
    """Mark the graph node now executing; returns the token that `reset_node` takes."""
    return _node.set(node)


def reset_node(token) -> None:
    """Back to the node (or none) before `set_node`."""
    _node.reset(token)


def current_fields() -> dict:
    """The run, user and node of the line being logged; only those that are set."""
    fields = {"run_id": _run_id.get(), "user_id": _user_id.get(), "node": _node.get()}
    return {key: value for key, value in fields.items() if value is not None}


def configured_secrets() -> tuple[str, ...]:
    """The secret values this process knows: settings' keys and passwords, and secret env vars."""
    from django.conf import settings  # formatters are built by Django's logging set-up

    values = [
        getattr(settings, "SECRET_KEY", ""),
        getattr(settings, "OPENAI_API_KEY", ""),
        getattr(settings, "RAG_METRICS_TOKEN", ""),
        *(db.get("PASSWORD") or "" for db in getattr(settings, "DATABASES", {}).values()),
        ((getattr(settings, "EVENTSTREAM_REDIS", None) or {}).get("password") or ""),
    ]
    values += [os.environ.get(name, "") for name in _SECRET_ENVIRONMENT]
    # Header lists (`authorization=Bearer x,api-key=y`) leak by their values, one by one.
    for name in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        for pair in os.environ.get(name, "").split(","):
            values.append(pair.partition("=")[2].strip())
    unique = {v for v in values if v and len(v) >= _MIN_SECRET_CHARS}
    return tuple(sorted(unique, key=len, reverse=True))  # a longer secret before its prefix


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """`text` with every known secret, and anything shaped like one, replaced by [redacted]."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class _Redacting(logging.Formatter):
    def __init__(self, *args, secrets: tuple[str, ...] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._secrets = configured_secrets() if secrets is None else secrets

    def redact(self, text: str) -> str:
        return redact(text, self._secrets)


class TextFormatter(_Redacting):
    """Readable lines (the default), with the run's context appended while a run executes."""

    def format(self, record: logging.LogRecord) -> str:
        return self.redact(self._with_context(super().format(record)))

    def _with_context(self, line: str) -> str:
        fields = current_fields()
        if not fields:
            return line
        context = " ".join(f"{key}={value}" for key, value in fields.items())
        first, sep, rest = line.partition("\n")  # after the message, before any traceback
        return f"{first} [{context}]{sep}{rest}"


class JsonFormatter(_Redacting):
    """One JSON object per line: time, level, logger, message, run/user/node, trace ids."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            # Redacted before encoding: JSON escapes would hide a secret with a quote in it.
            "message": self.redact(record.getMessage()),
            **current_fields(),
            "process": record.process,
            "thread": record.threadName,
        }
        entry.update(_trace_ids())
        if record.exc_info:
            entry["exception"] = self.redact(self.formatException(record.exc_info))
        if record.stack_info:
            entry["stack"] = self.redact(self.formatStack(record.stack_info))
        # JSON escapes newlines and control characters: a record is always exactly one line.
        return json.dumps(entry, default=str)


def _trace_ids() -> dict:
    """The current OpenTelemetry trace and span ids, so a log line joins its trace."""
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}
