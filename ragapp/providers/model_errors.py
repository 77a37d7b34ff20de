"""What a chat model call's failure says once the OpenAI client's retries are spent.

The openai SDK retries timeouts, connection errors, 408/409/429 and 5xx by itself
(`RAG_LLM_MAX_RETRIES` times, exponential backoff with jitter from 0.5 s, honouring Retry-After up
to two minutes). What escapes it is final. `explained_failures` turns that into a `ChatModelError`
whose message says, in words, what went wrong, where, and after how many attempts, with the API
key and any bearer token scrubbed from it. The SDK's exception is dropped (`from None`) so that
no traceback logged later can carry a server's echo of the key. A call not worth a second
attempt (the search's passage) goes through `without_retries`, and its message says so.
"""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import openai

DETAIL_CHARS = 200
_BEARER = re.compile(r"(?i)bearer\s+[A-Za-z0-9._~+/=-]+")
_SECRET_LIKE = re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}")


def loaded_sdk():
    """The openai SDK if something in this process has imported it (a model client), else None.

    Importing it takes about a second. A process whose chat models are not OpenAI clients (the
    fake ones, or none built yet) cannot meet its errors, so naming them must not import it: web
    processes and commands start that much sooner.
    """
    if "openai" not in sys.modules:
        return None
    import openai  # already loaded; waits for another thread still importing it

    return openai


class ChatModelError(Exception):
    """A chat model call failed for good; the message is safe to store and to show."""

    def __init__(self, message: str, *, kind: str, attempts: int | None = None):
        super().__init__(message)
        self.kind = kind  # timeout | connection | rate_limit | server_error | http_error | invalid
        self.attempts = attempts


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """`text` without the given secrets, bearer tokens or sk-... keys."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    text = _BEARER.sub("Bearer [redacted]", text)
    return _SECRET_LIKE.sub("[redacted]", text)


def describe(
    exc: openai.APIError,
    *,
    model: str,
    timeout: float | None,
    max_retries: int,
    secrets=(),
    timeout_source: str = "RAG_LLM_TIMEOUT",
    retried: bool = True,
) -> ChatModelError:
    """The `ChatModelError` that says what `exc` (final, from the SDK) means.

    `timeout_source` names what set `timeout`: the setting, or a call's own shorter limit.
    `retried` is False for a call made once whatever RAG_LLM_MAX_RETRIES says.
    """
    import openai  # loaded: `exc` is one of its errors

    request = _request_of(exc)
    where = _safe_url(request)
    attempts = _attempts(request)
    counted = f" after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts else ""
    retries = f"RAG_LLM_MAX_RETRIES={max_retries}" if retried else "this call is not retried"
    tries = f"gave up{counted} ({retries})"

    def error(kind: str, text: str) -> ChatModelError:
        return ChatModelError(redact(text, secrets), kind=kind, attempts=attempts)

    if isinstance(exc, openai.APITimeoutError):
        limit = f"within {timeout:g} s ({timeout_source})" if timeout else "in time"
        return error(
            "timeout", f"the chat model {model!r} at {where} did not answer {limit}; {tries}"
        )
    if isinstance(exc, openai.APIConnectionError):
        cause = _short(str(_root_cause(exc))) or "no detail"
        return error(
            "connection",
            f"the connection to the chat model server at {where} failed ({cause}); {tries}",
        )
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = _status_detail(exc)
        if status == 429:
            wait = exc.response.headers.get("retry-after")
            asked = f", Retry-After: {_short(wait)} s" if wait else ""
            return error(
                "rate_limit",
                f"the chat model server at {where} kept refusing with HTTP 429, rate limit "
                f"exceeded{asked} ({detail}); {tries}",
            )
        if status >= 500 or status in (408, 409):
            return error(
                "server_error",
                f"the chat model server at {where} failed with HTTP {status} ({detail}); {tries}",
            )
        hint = {
            401: "; check OPENAI_API_KEY",
            403: "; check OPENAI_API_KEY",
            404: "; check the model name and OPENAI_BASE_URL",
        }.get(status, "")
        return error(
            "http_error",
            f"the chat model server at {where} rejected the request for {model!r} with HTTP "
            f"{status} ({detail}){hint}; not retried",
        )
    return error(
        "invalid",
        f"the chat model server at {where} sent an unusable response ({_short(str(exc))})",
    )


@dataclass(frozen=True)
class CallTimeout:
    """A call's own limit on each attempt, in place of the client's (RAG_LLM_TIMEOUT)."""

    seconds: float
    source: str  # what set it, for the message when it runs out
    # False: one attempt, whatever RAG_LLM_MAX_RETRIES says (`without_retries`).
    retried: bool = True


def without_retries(model):
    """`model` whose OpenAI client makes one attempt a call; any other model as it is.

    The openai SDK sets retries per client, not per request. The copy's clients are the model's
    own with `max_retries=0` (`with_options` shares their connection pool); the model itself is
    not changed, so every other call keeps RAG_LLM_MAX_RETRIES.
    """
    sdk = loaded_sdk()
    root = getattr(model, "root_client", None)
    if sdk is None or not isinstance(root, sdk.OpenAI) or root.max_retries == 0:
        return model
    once = root.with_options(max_retries=0)
    update = {"root_client": once, "client": once.chat.completions, "max_retries": 0}
    root_async = getattr(model, "root_async_client", None)
    if isinstance(root_async, sdk.AsyncOpenAI):
        once_async = root_async.with_options(max_retries=0)
        update |= {"root_async_client": once_async, "async_client": once_async.chat.completions}
    return model.model_copy(update=update)


@contextmanager
def explained_failures(model, limit: CallTimeout | None = None):
    """Inside the block, the OpenAI client's final failure becomes a clear `ChatModelError`.

    `model` is the chat model being called (a `ChatOpenAI`, or any model: others pass through).
    `limit` is the call's own timeout, when it set one; without it the client's is named.
    """
    try:
        yield
    except Exception as exc:
        sdk = loaded_sdk()
        if sdk is None or not isinstance(exc, sdk.APIError):
            raise
        key = getattr(model, "openai_api_key", None)
        if limit is None:
            limit = CallTimeout(getattr(model, "request_timeout", None), "RAG_LLM_TIMEOUT")
        raise describe(
            exc,
            model=getattr(model, "model_name", None) or type(model).__name__,
            timeout=limit.seconds if isinstance(limit.seconds, int | float) else None,
            max_retries=getattr(model, "max_retries", None) or 0,
            secrets=(key.get_secret_value(),) if key is not None else (),
            timeout_source=limit.source,
            retried=limit.retried,
        ) from None


def _request_of(exc: openai.APIError):
    try:
        return exc.request
    except AttributeError:  # some subclasses set it lazily
        return None


def _root_cause(exc: BaseException) -> BaseException:
    """The first exception under the SDK's (and langchain's re-raised) API errors."""
    import openai  # loaded: `exc` is one of its errors

    seen = exc
    while isinstance(seen, openai.APIError) and (seen.__cause__ or seen.__context__):
        seen = seen.__cause__ or seen.__context__
    return seen


def _attempts(request) -> int:
    """How many attempts were made: the SDK numbers each retry in a request header."""
    count = request.headers.get("x-stainless-retry-count") if request is not None else None
    return int(count) + 1 if count and count.isdigit() else 0


def _safe_url(request) -> str:
    """The request's URL without credentials or query string."""
    if request is None:
        return "the configured OPENAI_BASE_URL"
    url = request.url
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}{url.path}"


def _status_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return _short(str(message))
    try:
        text = exc.response.text
    except Exception:  # a streamed body that was never read
        text = ""
    return _short(text) or "no detail"


def _short(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1] + "…"
