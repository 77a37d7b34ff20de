"""The emitter that stores a run's trace events, then publishes them.

The `TraceEvent` table is the single source of truth for the live stream and for replay, so an
event is always written first and published second: a subscriber can never see an event that a
reload would not find again. Payload shapes are documented in docs/events.md.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.db import transaction
from django.db.models import Max

from ragapp.models import QueryRun, TraceEvent
from ragapp.trace.kinds import EventKind

Subscriber = Callable[[TraceEvent], None]


class RunEmitter:
    """Appends numbered events (seq 1, 2, 3 ...) to one run, then tells subscribers."""

    def __init__(self, run: QueryRun, subscribers: list[Subscriber] | None = None):
        self.run = run
        self._subscribers = list(subscribers or [])
        self._lock = threading.Lock()
        # A run that has not started has no events yet: skip the query for the common case.
        started = run.status != QueryRun.Status.QUEUED
        self._seq: int | None = self._stored_seq() if started else 0

    def _stored_seq(self) -> int:
        return TraceEvent.objects.filter(run=self.run).aggregate(m=Max("seq"))["m"] or 0

    def subscribe(self, subscriber: Subscriber) -> None:
        """Call `subscriber` with every event emitted from now on."""
        self._subscribers.append(subscriber)

    def emit(
        self, kind: EventKind, payload: dict, *, node: str = "", duration_ms: float | None = None
    ) -> TraceEvent:
        """Store the event, then publish it once the row is committed."""
        with self._lock:
            if self._seq is None:
                self._seq = self._stored_seq()
            try:
                event = TraceEvent.objects.create(
                    run=self.run,
                    seq=self._seq + 1,
                    kind=str(kind),
                    node=node,
                    payload=payload,
                    duration_ms=None if duration_ms is None else round(duration_ms, 2),
                )
            except Exception:
                # The write failed, and the transaction around it may roll back events written
                # before it: read the stored sequence again next time rather than guess.
                self._seq = None
                raise
            self._seq += 1
        transaction.on_commit(lambda: self._publish(event))
        return event

    def _publish(self, event: TraceEvent) -> None:
        for subscriber in self._subscribers:
            subscriber(event)
