"""A real HTTP server speaking the OpenAI chat-completions API that misbehaves on purpose.

It runs in a thread of the test process on 127.0.0.1. A `behave(attempt)` function decides each
reply: a normal completion, an HTTP error with headers, a pause longer than the client's timeout,
a dropped connection, a streamed reply that breaks off or stalls midway, or shutting the whole
server down (so later connections are refused). A request with `"stream": true` gets its
completion as server-sent events, as from a real OpenAI-compatible server.
Every request that reaches it is recorded as an `Attempt`: when it arrived, when it was answered.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Attempt:
    """One request as the server saw it."""

    number: int  # 1, 2, 3 ... in arrival order
    arrived: float  # time.monotonic() when its body had been read
    body: dict
    retry_count: int | None  # the SDK's x-stainless-retry-count header: 0 first, then 1, 2 ...
    sent_key: str  # the bearer token the client sent (tests check it never leaks)
    replied: float | None = None  # time.monotonic() just before the reply was written

    @property
    def schema(self) -> str | None:
        """The name of the JSON schema a structured call asked for, or None for free text."""
        response_format = self.body.get("response_format") or {}
        return (response_format.get("json_schema") or {}).get("name")


@dataclass
class Reply:
    """What to do with one request."""

    status: int = 200
    body: dict | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # wait this long before answering (longer than the timeout: a hang)
    shut_down_first: bool = False  # stop listening before answering: later connects are refused
    drop: bool = False  # close the connection without a word (the client sees it reset)
    # A streamed reply that breaks off: only this many of its events are sent, then the server
    # waits `stall_s` (longer than the timeout: a stall mid-answer) and hangs up.
    stream_events: int | None = None
    stall_s: float = 0.0


def completion(content: str, *, model: str = "faulty-model") -> dict:
    """A chat-completions response body whose message says `content`."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def server_sent_events(body: dict) -> str:
    """A completion `body` as a streamed reply: a chunk a word, the finish reason, the usage."""
    choice = body["choices"][0]
    words = re.findall(r"\s*\S+", choice["message"]["content"] or "")
    deltas = [{"role": "assistant", "content": word} for word in words]
    chunks = [
        {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas
    ]
    chunks.append(
        {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}
    )
    chunks.append({"choices": [], "usage": body["usage"]})
    common = {"id": body["id"], "object": "chat.completion.chunk", "created": body["created"]}
    events = [
        f"data: {json.dumps({**common, 'model': body['model'], **chunk})}\n\n" for chunk in chunks
    ]
    return "".join(events) + "data: [DONE]\n\n"


def error_body(message: str, kind: str = "server_error") -> dict:
    """An OpenAI-style error body."""
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


RELEVANT = {"reasoning": "The document states it.", "relevant": True, "score": 0.95}
FAITHFUL = {
    "reasoning": "Every claim is in the documents.",
    "problematic_claims": [],
    "faithfulness_score": 0.95,
    "hallucination_risk": "low",
    "refinement_suggestion": "",
}
ANSWER = "Start it with `beta serve`; it listens on port 9000 [1]."


def healthy(attempt: Attempt) -> Reply:
    """A well-behaved model: relevant, an answer, faithful."""
    if attempt.schema == "DocumentRelevance":
        return Reply(body=completion(json.dumps(RELEVANT)))
    if attempt.schema == "AnswerFaithfulness":
        return Reply(body=completion(json.dumps(FAITHFUL)))
    return Reply(body=completion(ANSWER))


class MisbehavingModelServer:
    """`with MisbehavingModelServer(behave) as server:` serves at `server.base_url`."""

    def __init__(self, behave: Callable[[Attempt], Reply], *, port: int = 0):
        self.behave = behave
        self.attempts: list[Attempt] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._closed = False
        self._httpd = _Server(("127.0.0.1", port), _handler_for(self))
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> MisbehavingModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shut_down()

    def shut_down(self) -> None:
        """Stop accepting connections and close the listening socket (idempotent)."""
        self._stop.set()  # ends any pause in progress
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()

    def gaps(self) -> list[float]:
        """Seconds from each reply (or arrival, for a hang) to the arrival of the next request."""
        return [
            later.arrived - (earlier.replied or earlier.arrived)
            for earlier, later in zip(self.attempts, self.attempts[1:], strict=False)
        ]

    def _record(self, body: dict, retry_count: str | None, authorization: str) -> Attempt:
        with self._lock:
            attempt = Attempt(
                number=len(self.attempts) + 1,
                arrived=time.monotonic(),
                body=body,
                retry_count=int(retry_count) if retry_count and retry_count.isdigit() else None,
                sent_key=authorization.removeprefix("Bearer ").strip(),
            )
            self.attempts.append(attempt)
            return attempt


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a handler still pausing must not keep the test process alive
    block_on_close = False  # shutting down from inside a handler must not join that handler
    allow_reuse_address = True


def _handler_for(owner: MisbehavingModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one request per connection: a shut-down server refuses

        def do_POST(self) -> None:  # the name http.server dispatches POST to
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {}
            attempt = owner._record(
                body,
                self.headers.get("x-stainless-retry-count"),
                self.headers.get("Authorization", ""),
            )
            reply = owner.behave(attempt)
            if reply.delay_s and owner._stop.wait(reply.delay_s):
                return  # the test is over; the client gave up long ago
            if reply.shut_down_first:
                owner.shut_down()
            if reply.drop:
                self.close_connection = True
                return
            payload = reply.body if reply.body is not None else ""
            streamed = body.get("stream") and reply.status == 200 and isinstance(payload, dict)
            if streamed:  # a streamed request gets its completion as server-sent events
                data = server_sent_events(payload).encode()
            else:
                data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
            attempt.replied = time.monotonic()
            try:
                self.send_response(reply.status)
                kind = "text/event-stream" if streamed else "application/json"
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if streamed and reply.stream_events is not None:
                    events = data.decode().split("\n\n")[: reply.stream_events]
                    self.wfile.write("".join(event + "\n\n" for event in events).encode())
                    self.wfile.flush()
                    owner._stop.wait(reply.stall_s)
                    return  # the rest of the promised body never comes
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and left

        def log_message(self, format: str, *args) -> None:
            pass  # quiet: the test reads `owner.attempts`

    return Handler
