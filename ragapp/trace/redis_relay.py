"""Live traces across processes: django-eventstream's Redis pub/sub, made to survive Redis restarts.

With RAG_REDIS_URL set, every event a process publishes goes to one Redis pub/sub channel, and
every web process relays what it hears to its own stream listeners: a run executed by a Celery
worker, or by another web process, streams from any of them. The library's own relay subscribes
once and dies with its connection; this one reconnects with backoff and, after every
(re)subscription, makes each open stream catch up from the TraceEvent table (the library's
"overflow" path). Events published while Redis was away are thus delivered once, in order, from
the database, and the client never notices.
"""

from __future__ import annotations

import asyncio
import json
import logging

from django_eventstream.event import Event

logger = logging.getLogger(__name__)

PUBSUB_CHANNEL = "events_channel"  # the name django-eventstream's send_event publishes to
_BACKOFF_FIRST, _BACKOFF_MAX = 0.2, 5.0


class ResilientRedisListener:
    """Relays Redis pub/sub events to this process's listeners; reconnects when Redis goes away."""

    def __init__(self, manager, connection: dict):
        self.manager = manager  # django-eventstream's ListenerManager of this process
        self.connection = connection
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        from redis.asyncio import Redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        # django-eventstream creates this task and drops it; asyncio holds tasks only weakly, so
        # without a strong reference the garbage collector can destroy the relay mid-run.
        self._task = asyncio.current_task()
        backoff = _BACKOFF_FIRST
        while True:
            # No silent reconnection inside redis-py: a lost connection must come here, so that
            # the streams catch up on what was published while it was down.
            client = Redis(**self.connection, retry=Retry(NoBackoff(), 0))
            pubsub = client.pubsub()
            try:
                await pubsub.subscribe(PUBSUB_CHANNEL)
                if backoff > _BACKOFF_FIRST:
                    logger.warning("Redis pub/sub is back; open streams catch up from storage")
                backoff = _BACKOFF_FIRST
                self.catch_up_all()
                async for message in pubsub.listen():
                    if message["type"] == "message":
                        self.relay(message["data"])
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis restarting, or a network blip: reconnect
                logger.warning("Redis pub/sub lost (%s); reconnecting in %.1f s", exc, backoff)
            finally:
                try:
                    await pubsub.aclose()
                    await client.aclose()
                except Exception:
                    pass
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _BACKOFF_MAX)  # also marks that a reconnection happened

    def relay(self, raw: bytes | str) -> None:
        message = json.loads(raw)
        event = Event(
            message["channel"], message["event_type"], message["data"], id=message["pub_id"]
        )
        self.manager.add_to_queues(message["channel"], event)

    def catch_up_all(self) -> None:
        """Make every open stream of this process re-read what it missed from storage."""
        with self.manager.lock:
            listeners = {
                listener
                for channel_listeners in self.manager.listeners_by_channel.values()
                for listener in channel_listeners
            }
            for listener in listeners:
                listener.overflow = True
        for listener in listeners:
            listener.wake_threadsafe()


def install(connection: dict) -> None:
    """Make this process's Redis relay resilient: the listener here, a fail-fast publisher.

    The library's publishing client retries a refused connection with backoff inside redis-py
    (about 4 s per event); a run would crawl through a Redis outage. Its events are stored
    anyway and streams catch up, so publishing fails at once instead (see `publish`).
    """
    import django_eventstream.eventstream as library
    import redis
    from django_eventstream.views import get_listener_manager
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    library.redis_client = redis.Redis(**connection, retry=Retry(NoBackoff(), 0))
    manager = get_listener_manager()
    manager.redis_listener = ResilientRedisListener(manager, connection)
