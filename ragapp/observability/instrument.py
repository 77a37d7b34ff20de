"""Where a run is observed: around the run, around each graph node, around each model call.

Three wrapping points, so no node and no provider carries instrumentation of its own:
- `observed_run` around `runner.execute_run`: run counters and duration, the run's root span
  (linked to the request that submitted it), and the run's log context;
- `observed_node`, applied to every node as the graph is wired (graph/builder.py builds an
  `ObservedStateGraph`): the node's duration, its span, and its name in the log context;
- `ModelCallObserver`, a LangChain callback handler passed to the graph's invocation, which
  LangChain hands down to every chat model call inside it: outcome, latency, tokens and a span
  with OpenTelemetry's GenAI attributes, whatever the provider.

No ORM import: the graph imports this module and must run without a database.
"""

from __future__ import annotations

import functools
import threading
import time
from contextlib import contextmanager
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.graph import StateGraph
from opentelemetry import context as otel_context
from opentelemetry.trace import SpanKind, Status, StatusCode

from ragapp.observability import logs, metrics, tracing
from ragapp.providers.model_errors import loaded_sdk

AGENT_NAME = "docs-assistant"
FINAL_STATUSES = {"answered", "refused", "failed"}


def observed_node(name: str, node):
    """`node` timed, traced and named in the log context as graph node `name`."""

    @functools.wraps(node)  # LangGraph reads the wrapped signature to inject `runtime`
    def observed(state, runtime):
        token = logs.set_node(name)
        started = time.perf_counter()
        try:
            tracer = tracing.tracer()
            if tracer is None:
                return node(state, runtime)
            with tracer.start_as_current_span(f"node {name}", attributes={"rag.node": name}):
                return node(state, runtime)
        finally:
            metrics.NODE_SECONDS.labels(name).observe(time.perf_counter() - started)
            logs.reset_node(token)

    return observed


@contextmanager
def observed_run(run, *, provider: str, trace_context: dict | None = None):
    """Observe one run's execution; yields the callbacks to pass to the graph's invocation.

    `run` is the QueryRun (only its pk, owner_id, status, error and response_metadata are read,
    after the block for the last three). `trace_context` is the submitting request's carrier.
    """
    metrics.RUNS_STARTED.inc()
    metrics.RUNS_IN_PROGRESS.inc()
    started = time.perf_counter()
    observer = ModelCallObserver(provider)
    try:
        with (
            logs.run_context(run_id=run.pk, user_id=run.owner_id),
            _run_span(run, provider, trace_context) as span,
        ):
            yield [observer]
            _end_run_span(span, run, observer)
    finally:
        status = str(run.status) if str(run.status) in FINAL_STATUSES else "ended_elsewhere"
        metrics.RUNS_IN_PROGRESS.dec()
        metrics.RUNS_FINISHED.labels(status).inc()
        metrics.RUN_SECONDS.labels(status).observe(time.perf_counter() - started)
        # No estimate (a model without a list price) adds 0: the series exists either way.
        cost = (run.response_metadata or {}).get("cost_usd") or 0.0
        metrics.COST_USD.labels(provider).inc(cost)


@contextmanager
def _run_span(run, provider: str, trace_context: dict | None):
    tracer = tracing.tracer()
    if tracer is None:
        yield None
        return
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT_NAME,
        "gen_ai.provider.name": provider,
        "gen_ai.system": provider,  # the attribute's name before semantic conventions 1.37
        "rag.run.id": str(run.pk),
    }
    if run.owner_id is not None:
        attributes["user.id"] = str(run.owner_id)
    # A new trace, whatever context this thread has: a run is one trace of its own, linked to
    # the request that submitted it rather than nested in it (it outlives the request).
    with tracer.start_as_current_span(
        f"invoke_agent {AGENT_NAME}",
        context=otel_context.Context(),
        links=tracing.links_from(trace_context),
        attributes=attributes,
    ) as span:
        yield span


def _end_run_span(span, run, observer: ModelCallObserver) -> None:
    if span is None:
        return
    span.set_attribute("rag.run.status", str(run.status))
    span.set_attribute("gen_ai.usage.input_tokens", observer.tokens["input"])
    span.set_attribute("gen_ai.usage.output_tokens", observer.tokens["output"])
    if str(run.status) == "failed":
        # The runner records failures rather than raising them; the type is the message's head.
        span.set_attribute("error.type", (run.error or "").split(":", 1)[0] or "failed")
        span.set_status(Status(StatusCode.ERROR))


class ModelCallObserver(BaseCallbackHandler):
    """Counts, times and traces every chat model call of one run (a LangChain callback)."""

    # Only model calls: LangGraph reports every node and channel write as a "chain".
    ignore_chain = True
    ignore_retriever = True
    ignore_agent = True
    run_inline = True

    def __init__(self, provider: str):
        self.provider = provider
        self.tokens = {"input": 0, "output": 0}
        self._calls: dict[UUID, tuple[str, float, object]] = {}
        self._lock = threading.Lock()  # relevance judgments call models from a thread pool

    def on_chat_model_start(self, serialized, messages, *, run_id, metadata=None, **kwargs):
        metadata = metadata or {}
        params = kwargs.get("invocation_params") or {}
        model = str(
            metadata.get("ls_model_name")
            or params.get("model")
            or params.get("model_name")
            or (serialized or {}).get("name")
            or "unknown"
        )
        span = None
        tracer = tracing.tracer()
        if tracer is not None:
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": self.provider,
                "gen_ai.system": self.provider,
                "gen_ai.request.model": model,
            }
            for source, attribute in (
                ("ls_temperature", "gen_ai.request.temperature"),
                ("ls_max_tokens", "gen_ai.request.max_tokens"),
            ):
                if metadata.get(source) is not None:
                    attributes[attribute] = metadata[source]
            # Child of the current span: the node that made the call (the context is copied
            # into the graph's worker threads).
            span = tracer.start_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes)
        with self._lock:
            self._calls[run_id] = (model, time.perf_counter(), span)

    def on_llm_end(self, response, *, run_id, **kwargs):
        call = self._pop(run_id)
        if call is None:
            return
        model, started, span = call
        usage = _usage(response)
        with self._lock:
            self.tokens["input"] += usage["input"]
            self.tokens["output"] += usage["output"]
        for kind in ("input", "output"):
            if usage[kind]:
                metrics.MODEL_TOKENS.labels(self.provider, model, kind).inc(usage[kind])
        self._count(model, started, "ok")
        if span is not None:
            span.set_attribute("gen_ai.usage.input_tokens", usage["input"])
            span.set_attribute("gen_ai.usage.output_tokens", usage["output"])
            if usage["model"]:
                span.set_attribute("gen_ai.response.model", usage["model"])
            span.end()

    def on_llm_error(self, error, *, run_id, **kwargs):
        call = self._pop(run_id)
        if call is None:
            return
        model, started, span = call
        outcome = outcome_of(error)
        self._count(model, started, outcome)
        if span is not None:
            span.set_attribute(
                "error.type", outcome if outcome != "error" else type(error).__name__
            )
            # No description: a server's error text may echo the request's credentials.
            span.set_status(Status(StatusCode.ERROR))
            span.end()

    def _pop(self, run_id):
        with self._lock:
            return self._calls.pop(run_id, None)

    def _count(self, model: str, started: float, outcome: str) -> None:
        metrics.MODEL_CALLS.labels(self.provider, model, outcome).inc()
        metrics.MODEL_SECONDS.labels(self.provider, model, outcome).observe(
            time.perf_counter() - started
        )


def outcome_of(error: BaseException) -> str:
    """A failed call's outcome label: timeout, 429 or error."""
    sdk = loaded_sdk()  # an SDK error means the SDK is loaded
    if isinstance(error, TimeoutError) or (sdk and isinstance(error, sdk.APITimeoutError)):
        return "timeout"
    rate_limited = sdk is not None and isinstance(error, sdk.RateLimitError)
    if rate_limited or getattr(error, "status_code", None) == 429:
        return "429"
    return "error"


def _usage(response) -> dict:
    """Input and output tokens (and the answering model) a chat result reports."""
    found = {"input": 0, "output": 0, "model": ""}
    for generations in response.generations:
        for generation in generations:
            message = getattr(generation, "message", None)
            meta = getattr(message, "usage_metadata", None) or {}
            found["input"] += int(meta.get("input_tokens", 0) or 0)
            found["output"] += int(meta.get("output_tokens", 0) or 0)
            response_meta = getattr(message, "response_metadata", None) or {}
            found["model"] = found["model"] or str(response_meta.get("model_name") or "")
    return found


class ObservedStateGraph(StateGraph):
    """A StateGraph whose function nodes are wrapped by `observed_node` as they are added."""

    def add_node(self, node, action=None, **kwargs):
        if isinstance(node, str) and callable(action):
            action = observed_node(node, action)
        return super().add_node(node, action, **kwargs)
