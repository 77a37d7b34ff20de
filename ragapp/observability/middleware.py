"""A server span for each HTTP request, so a run's trace can link to the request that started it."""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from opentelemetry import propagate
from opentelemetry.trace import SpanKind, Status, StatusCode

from ragapp.observability import tracing


class RequestSpanMiddleware:
    """Wraps each request in a SERVER span (continuing an incoming `traceparent`), when tracing.

    Sync and async capable, so it never makes Django switch modes under ASGI; with tracing off
    it passes the request straight through.
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self._acall(request)
        tracer = tracing.tracer()
        if tracer is None:
            return self.get_response(request)
        with _request_span(tracer, request) as span:
            response = self.get_response(request)
            _finish(span, request, response)
            return response

    async def _acall(self, request):
        tracer = tracing.tracer()
        if tracer is None:
            return await self.get_response(request)
        with _request_span(tracer, request) as span:
            response = await self.get_response(request)
            _finish(span, request, response)
            return response


def _request_span(tracer, request):
    return tracer.start_as_current_span(
        request.method,  # renamed to "METHOD route" once the URL is resolved
        context=propagate.extract(request.headers),
        kind=SpanKind.SERVER,
        attributes={
            "http.request.method": request.method,
            "url.path": request.path,
            "url.scheme": request.scheme,
        },
    )


def _finish(span, request, response) -> None:
    match = getattr(request, "resolver_match", None)
    if match is not None and match.route:
        route = "/" + match.route
        span.set_attribute("http.route", route)
        span.update_name(f"{request.method} {route}")
    span.set_attribute("http.response.status_code", response.status_code)
    if response.status_code >= 500:
        span.set_status(Status(StatusCode.ERROR))
