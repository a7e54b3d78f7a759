"""Sending to the pages' channel-layer groups from synchronous code (jobs, run loops, views).

`async_to_sync(layer.group_send)` called from a plain thread starts a new thread and a new event
loop for every call, and the Redis layer opens a connection pool per loop: each message paid for a
thread, a loop and a TCP connection. Here one long-lived loop per process, in a daemon thread,
sends through the layer over the same pool (`group_send`).

A stream of many messages (a run's transcript) takes a shorter path where the layer is Channels'
Redis Pub/Sub layer: the calling thread publishes with redis-py's synchronous client, as the layer
would (same channel name, same serializer), and no other thread wakes for it (`stream_to_group`).
Handing each message to the loop cost three thread wake-ups per message; at 1000 messages a second
that overhead was most of an inference worker's CPU (benchmarks/RESULTS.md, streaming latency).
"""

import asyncio
import logging
import threading
import time
import weakref
from collections.abc import Callable

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

# Long enough for a busy Redis; a send that takes longer is reported to the caller as failed.
SEND_TIMEOUT_S = 10
# A synchronous publish waits at most this long for Redis; after a failure, streamed messages are
# dropped (and counted in the log) for RETRY_AFTER_S instead of each one waiting that long again.
PUBLISH_TIMEOUT_S = 2
RETRY_AFTER_S = 5

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _sending_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="channel-layer sender", daemon=True).start()
        return _loop


def group_send(group: str, message: dict) -> None:
    """Send `message` to `group` and wait until the layer took it; raises what the layer raised."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is not None:
        raise RuntimeError("group_send is for synchronous code; in a coroutine, await the layer's group_send")
    future = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), _sending_loop())
    future.result(timeout=SEND_TIMEOUT_S)


def stream_to_group(group: str, message: dict) -> None:
    """Send `message` to `group` for a stream of many messages; never raises, a failure is logged.
    Messages sent from one thread arrive in that order. On the Redis Pub/Sub layer the calling
    thread publishes and waits for Redis's reply (a round trip, the GIL released meanwhile); on
    any other layer the message is handed to this process's sending loop and the call returns at
    once (the loop starts sends in order, and the layer sends one at a time)."""
    layer = get_channel_layer()
    if layer is None:
        return
    publisher = _publisher_for(layer)
    if publisher is not None:
        publisher.publish(group, message)
        return
    loop = _sending_loop()
    loop.call_soon_threadsafe(_start_send, loop, layer, group, message)


def _start_send(loop: asyncio.AbstractEventLoop, layer, group: str, message: dict) -> None:
    loop.create_task(layer.group_send(group, message)).add_done_callback(_log_failure)


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("could not send to the channel layer", exc_info=task.exception())


def call_later(delay_s: float, function: Callable[[], None]) -> None:
    """Call `function` in a worker thread of this process after `delay_s`, for senders that hold
    messages back to send them together; `function` may call `group_send`."""
    loop = _sending_loop()
    loop.call_soon_threadsafe(loop.call_later, delay_s, loop.run_in_executor, None, function)


class PubSubPublisher:
    """Publishes to a group as channels_redis's `RedisPubSubChannelLayer.group_send` does, from the
    calling thread: the layer's own channel name, shard and serializer, a synchronous redis-py
    client (thread-safe, one connection per thread that publishes at once). What a consumer
    receives is what the layer would have sent; tests/court/test_broadcast.py holds the two to
    that against a real Redis."""

    def __init__(self, layer):
        import redis
        from channels_redis.pubsub import RedisPubSubLoopLayer

        # The layer's per-loop half knows the channel names and the shards; building one here
        # opens nothing (its connections are made on first use, in a loop, and this one has none).
        self._names = RedisPubSubLoopLayer(*layer._args, **layer._kwargs, channel_layer=layer)
        self._serialize = layer.serialize
        self._clients = {}  # the layer's shard -> a synchronous client of the same Redis
        for shard in self._names._shards:
            options = {"socket_timeout": PUBLISH_TIMEOUT_S, **shard.host}
            self._clients[shard] = redis.Redis.from_url(options.pop("address"), **options)
        self._lock = threading.Lock()  # guards the failure state below
        self._failed_at = -float("inf")
        self._dropped = 0

    @staticmethod
    def supports(layer) -> bool:
        from channels_redis.pubsub import RedisPubSubChannelLayer
        from channels_redis.utils import decode_hosts

        # Hosts given as sentinels (no address) go through the layer itself.
        return isinstance(layer, RedisPubSubChannelLayer) and all(
            "address" in host for host in decode_hosts(layer._kwargs.get("hosts"))
        )

    def publish(self, group: str, message: dict) -> None:
        if time.monotonic() - self._failed_at < RETRY_AFTER_S:
            with self._lock:
                self._dropped += 1
            return
        channel = self._names._get_group_channel_name(group)
        client = self._clients[self._names._get_shard(channel)]
        try:
            client.publish(channel, self._serialize(message))
        except Exception:
            with self._lock:
                self._failed_at = time.monotonic()
            logger.exception("could not send to the channel layer; messages for the next %s s are not sent live", RETRY_AFTER_S)
            return
        if self._dropped:
            with self._lock:
                dropped, self._dropped = self._dropped, 0
            if dropped:
                logger.error("%d messages were not sent live while the channel layer was unreachable", dropped)


_publishers: "weakref.WeakKeyDictionary[object, PubSubPublisher | None]" = weakref.WeakKeyDictionary()


def _publisher_for(layer) -> PubSubPublisher | None:
    """The synchronous publisher of `layer`, built once per layer object; None where the layer is
    not one it can stand in for."""
    try:
        return _publishers[layer]
    except KeyError:
        with _loop_lock:
            if layer not in _publishers:
                _publishers[layer] = PubSubPublisher(layer) if PubSubPublisher.supports(layer) else None
            return _publishers[layer]
