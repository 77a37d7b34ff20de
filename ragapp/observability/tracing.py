"""OpenTelemetry traces: off unless an OTLP endpoint is configured, then one trace per run.

`configure()` runs at start-up (ragapp's AppConfig). With `OTEL_EXPORTER_OTLP_ENDPOINT` or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set (settings.OTEL_TRACING), it installs the SDK's tracer
provider with a batching OTLP/HTTP exporter; the SDK reads the other standard variables itself
(`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`, ...). Otherwise
`tracer()` is None and the instrumentation skips spans altogether, so tracing off costs nothing.

A run's trace is linked to the HTTP request that submitted it: `capture()` writes the request's
span context as a W3C `traceparent` carrier, which travels with the run to the executor's thread
or inside the Celery task message, and `links_from()` turns it back into a span link.
"""

from __future__ import annotations

import logging

from opentelemetry import propagate, trace
from opentelemetry.trace import Link, Tracer, TracerProvider

logger = logging.getLogger(__name__)

INSTRUMENTATION = "ragapp"
_tracer: Tracer | None = None


def configure() -> None:
    """Export traces over OTLP/HTTP when settings say so (once per process)."""
    from django.conf import settings  # called from AppConfig.ready

    if not settings.OTEL_TRACING or _tracer is not None:
        return
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # The SDK is imported only here: a process with tracing off never loads it.
    resource = Resource.create()  # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, if set
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "docs-assistant"}))
    provider = SdkTracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    use_provider(provider)
    logger.info("OpenTelemetry traces are exported over OTLP/HTTP")


def use_provider(provider: TracerProvider | None) -> None:
    """Trace with `provider` from now on (None: tracing off). Tests pass an in-memory one."""
    global _tracer
    _tracer = provider.get_tracer(INSTRUMENTATION) if provider is not None else None


def tracer() -> Tracer | None:
    """The tracer, or None while tracing is off."""
    return _tracer


def capture() -> dict[str, str]:
    """The current span context as a W3C trace-context carrier ({} with none to pass on)."""
    if _tracer is None:
        return {}
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def links_from(carrier: dict[str, str] | None) -> list[Link]:
    """A link to the span a carrier from `capture()` describes, if it describes one."""
    if not carrier:
        return []
    context = trace.get_current_span(propagate.extract(carrier)).get_span_context()
    return [Link(context)] if context.is_valid else []
