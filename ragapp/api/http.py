"""Content types and errors of the API: JSON, Server-Sent Events, oversized bodies."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.views import exception_handler


class RequestTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "too_large"


def api_exception_handler(exc, context):
    """DRF's handler, plus a JSON 413 for a body over DATA_UPLOAD_MAX_MEMORY_SIZE.

    Django refuses such a body while DRF parses it; left alone, that becomes a bare 400 page.
    """
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        exc = RequestTooLarge(f"The request body is over {limit:,} bytes.")
    return exception_handler(exc, context)


class EventStreamRenderer(BaseRenderer):
    """Lets clients ask for `text/event-stream`; the stream itself is a streaming response."""

    media_type = "text/event-stream"
    format = "sse"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        # Only reached for a response that is not a stream; SseCapableMixin turns errors into
        # JSON before that, so this is a plain JSON fallback.
        return JSONRenderer().render(data, "application/json", renderer_context)


class SseCapableMixin:
    """JSON by default, or a live stream for `Accept: text/event-stream`; errors are JSON."""

    renderer_classes = [JSONRenderer, EventStreamRenderer]

    def wants_stream(self, request) -> bool:
        return getattr(request, "accepted_renderer", None) is not None and (
            request.accepted_renderer.format == EventStreamRenderer.format
        )

    def finalize_response(self, request, response, *args, **kwargs):
        if response.status_code >= 400 and self.wants_stream(request):
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)
