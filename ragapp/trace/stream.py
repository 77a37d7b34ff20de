"""django-eventstream wiring: one channel per run, backed by the TraceEvent table.

The storage class does not store anything itself. The graph's emitter has already written the
`TraceEvent` row (seq 1, 2, 3 ...) when it publishes, so `append_event` only hands back that row's
seq as the event id, and `get_events` (Last-Event-ID resume) reads the very same rows. Nothing is
stored twice, and nothing expires after 24 hours as with the library's DjangoModelStorage.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections import Counter

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django_eventstream import send_event
from django_eventstream.channelmanager import DefaultChannelManager
from django_eventstream.event import Event
from django_eventstream.storage import EventDoesNotExist, StorageBase
from django_eventstream.utils import make_id, sse_encode_event
from django_eventstream.views import events

from ragapp.models import TraceEvent
from ragapp.observability.metrics import STREAMS_OPEN
from ragapp.selectors import run_events_list, run_trace_complete, run_visible_to

logger = logging.getLogger(__name__)

CHANNEL_PREFIX = "run-"


def channel_for(run_id) -> str:
    """The eventstream channel of a run."""
    return f"{CHANNEL_PREFIX}{run_id}"


def run_id_of(channel: str) -> uuid.UUID | None:
    """The run a channel belongs to, or None for a channel that is not a run's."""
    if not channel.startswith(CHANNEL_PREFIX):
        return None
    try:
        return uuid.UUID(channel.removeprefix(CHANNEL_PREFIX))
    except ValueError:
        return None


def event_message(event: TraceEvent) -> dict:
    """The JSON an SSE client receives for a trace event (pages embed the same)."""
    return {
        "seq": event.seq,
        "kind": event.kind,
        "node": event.node,
        "payload": event.payload,
        "created_at": event.created_at.isoformat(),
        "duration_ms": event.duration_ms,
    }


# After a failed publish, the relay is skipped this long: a Redis outage must not slow runs down
# event by event. Streams catch up from the database (`once_in_order`).
RELAY_PAUSE_S = 1.0
_relay_paused_until = 0.0


def publish(event: TraceEvent) -> None:
    """Send a stored trace event to the run's live subscribers, in this and other processes.

    The event is already stored; if it cannot be relayed (Redis restarting), the run goes on and
    open streams catch up from the database (ragapp/trace/redis_relay.py, `once_in_order`).
    """
    global _relay_paused_until
    if time.monotonic() < _relay_paused_until:
        return
    try:
        send_event(channel_for(event.run_id), event.kind, event_message(event))
    except Exception as exc:
        _relay_paused_until = time.monotonic() + RELAY_PAUSE_S
        logger.warning("event %s of run %s not relayed live: %s", event.seq, event.run_id, exc)


def release_connection() -> None:
    """Give this thread's database connection back to the pool now.

    A stream lives for minutes, and under ASGI its database reads run on a thread of its own;
    holding a pooled connection between reads would let a few hundred idle streams starve the
    pool. Inside a transaction (tests) the connection is left alone.
    """
    if not connection.in_atomic_block:
        connection.close()


def _as_event(channel: str, row: TraceEvent) -> Event:
    data = json.dumps(event_message(row), cls=DjangoJSONEncoder)
    return Event(channel, row.kind, data, id=row.seq)


class TraceEventStorage(StorageBase):
    """Eventstream storage reading (never writing) the TraceEvent rows of a run."""

    def append_event(self, channel, event_type, data):
        """Return the already-stored event that is being published (its id is its seq)."""
        message = json.loads(data)
        return Event(channel, event_type, data, id=int(message["seq"]))

    def get_events(self, channel, last_id, limit=100):
        """Events after `last_id` (a seq), in order."""
        run_id = run_id_of(channel)
        if run_id is None:
            raise EventDoesNotExist("not a run channel", 0)
        try:
            rows = list(
                TraceEvent.objects.filter(run_id=run_id, seq__gt=last_id).order_by("seq")[:limit]
            )
        finally:
            release_connection()
        return [_as_event(channel, row) for row in rows]

    def get_current_id(self, channel):
        """The last seq stored for the run (0 before its first event)."""
        run_id = run_id_of(channel)
        if run_id is None:
            return 0
        try:
            last = TraceEvent.objects.filter(run_id=run_id).order_by("-seq").first()
        finally:
            release_connection()
        return last.seq if last else 0


class RunChannelManager(DefaultChannelManager):
    """Only a run's owner, or staff, may read its channel."""

    def can_read_channel(self, user, channel):
        run_id = run_id_of(channel)
        try:
            return run_id is not None and run_visible_to(user=user, run_id=run_id)
        finally:
            release_connection()


def requested_seq(request: HttpRequest, channel: str) -> int | None:
    """The seq a client resumes after (Last-Event-ID header or lastEventId parameter), if any."""
    raw = request.headers.get("Last-Event-ID") or request.GET.get("lastEventId") or ""
    for part in raw.split(","):
        name, _, seq = part.rpartition(":")
        if name == channel and seq.isascii() and seq.isdigit() and len(seq) <= 12:
            return int(seq)
    return None


def follow_run(request: HttpRequest, run, *, after: int | None = None) -> HttpResponse:
    """A run's trace as SSE for a user who may read it; the portal and the API both use this.

    The stream ends after `done`. A finished run whose events the client already has gets a 204,
    which tells an EventSource to stop reconnecting; a finished run without a resume point gets
    its whole trace rather than a wait for live events that will never come.
    """
    resume = requested_seq(request, channel_for(run.pk))
    resume = after if resume is None else resume
    if run_trace_complete(run):
        if not run_events_list(run=run, after=resume or 0):
            release_connection()
            return HttpResponse(status=204)
        after = resume or 0
    return run_event_stream(request, run.pk, after=after, close_on_done=True)


def run_event_stream(
    request: HttpRequest, run_id, *, after: int | None = None, close_on_done: bool = False
) -> HttpResponse:
    """The SSE response following a run's channel; the caller has checked the user may read it.

    A client's own Last-Event-ID wins (it is reconnecting); otherwise `after` makes the stream
    start with the stored events after that seq, and None means live events only. With
    `close_on_done` the response ends after the `done` event, so `curl -N` returns.
    """
    channel = channel_for(run_id)
    resume = requested_seq(request, channel)
    if resume is None:
        resume = after
    # django-eventstream parses these itself; hand it one well-formed value (or none), so a
    # malformed header cannot become an error stream. Its proxy and hand-over parameters are
    # dropped: `recover` reads a GRIP proxy's state that is not there (a 500), `link` pages for
    # that proxy, and `es-meta` would name its own user and channels (an expired one raised).
    request.GET = request.GET.copy()
    for name in ("es-meta", "lastEventId", "recover", "link"):
        request.GET.pop(name, None)
    if resume is None:
        request.META.pop("HTTP_LAST_EVENT_ID", None)
    else:
        request.META["HTTP_LAST_EVENT_ID"] = f"{channel}:{resume}"
    release_connection()  # the stream may stay open for minutes: do not hold a pooled connection
    user_id = getattr(getattr(request, "user", None), "pk", None)
    if not open_streams.take(user_id, limit=settings.RAG_MAX_STREAMS_PER_USER):
        response = HttpResponse(
            f"You have {settings.RAG_MAX_STREAMS_PER_USER} live traces open; close one first.",
            status=429,
            content_type="text/plain",
        )
        response["Retry-After"] = "10"
        return response
    response = events(request, channels=[channel])
    if not response.streaming:
        open_streams.give_back(user_id)
        return response
    response.streaming_content = once_in_order(
        response.streaming_content, channel, resume or 0, close_on_done=close_on_done
    )
    # Django closes every response it sent, or began to send, exactly once, a client that left
    # early included; the generator's own `finally` would not run for a stream never iterated.
    response._resource_closers.append(lambda: open_streams.give_back(user_id))
    return response


class StreamSlots:
    """Open streams per user in this process, so one user cannot hold every connection."""

    def __init__(self):
        self._open: Counter = Counter()
        self._lock = threading.Lock()

    def take(self, user_id, *, limit: int) -> bool:
        with self._lock:
            if self._open[user_id] >= limit:
                return False
            self._open[user_id] += 1
        STREAMS_OPEN.inc()
        return True

    def give_back(self, user_id) -> None:
        with self._lock:
            self._open[user_id] -= 1
            if self._open[user_id] <= 0:
                del self._open[user_id]
        STREAMS_OPEN.dec()

    def count(self, user_id) -> int:
        with self._lock:
            return self._open[user_id]


open_streams = StreamSlots()


def _seq_of(block: str, channel: str) -> int | None:
    for line in block.split("\n"):
        if line.startswith("id:"):
            for part in line[3:].strip().split(","):
                name, _, seq = part.rpartition(":")
                if name == channel and seq.isdigit():
                    return int(seq)
    return None


def stored_blocks(channel: str, after: int, before: int | None = None) -> list[tuple[int, str]]:
    """(seq, SSE block) of a run's stored events with after < seq (< before), in order."""
    run_id = run_id_of(channel)
    if run_id is None:
        return []
    rows = TraceEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")
    if before is not None:
        rows = rows.filter(seq__lt=before)
    try:
        rows = list(rows)
    finally:
        release_connection()
    return [
        (
            row.seq,
            sse_encode_event(
                row.kind,
                json.dumps(event_message(row), cls=DjangoJSONEncoder),
                event_id=make_id({channel: row.seq}),
            ),
        )
        for row in rows
    ]


async def once_in_order(stream, channel: str, last_seq: int, *, close_on_done: bool = False):
    """Pass SSE blocks through so that each event is sent exactly once, in seq order.

    django-eventstream reads stored events on connect and then relays live ones; an event
    committed during that read can arrive both ways, so one whose seq was already sent is dropped.
    Live events can also go missing (published while the Redis relay was away): one arriving
    after a gap has the missing ones read from the database and sent first, and every keep-alive
    (20 s of silence) also catches up from the database, so even a lost `done` arrives. With
    `close_on_done`, the stream ends after `done`.
    """
    pending = ""
    try:
        async for chunk in stream:
            pending += chunk.decode() if isinstance(chunk, bytes) else chunk
            *blocks, pending = pending.split("\n\n")
            out, finished = [], False
            for block in blocks:
                seq = _seq_of(block, channel)
                caught_up = []
                if seq is not None and seq > last_seq + 1:
                    caught_up = await sync_to_async(stored_blocks)(channel, last_seq, seq)
                elif block.startswith("event: keep-alive\n"):
                    caught_up = await sync_to_async(stored_blocks)(channel, last_seq)
                for stored_seq, stored in [*caught_up, (seq, block + "\n\n")]:
                    if stored_seq is not None:
                        if stored_seq <= last_seq:
                            continue
                        last_seq = stored_seq
                    out.append(stored)
                    if close_on_done and stored.startswith("event: done\n"):
                        finished = True
                        break
                if finished:
                    break
            if out:
                yield "".join(out)
            if finished:
                return
        if pending:
            yield pending
    finally:
        # Stop the library's generator now, so its listener is unregistered at once.
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
