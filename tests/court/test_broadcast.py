"""Streaming to a page group from plain threads: in order, failures logged, and on Redis Pub/Sub the
same messages the layer itself would send."""

import asyncio
import logging
import threading
import time

import pytest
from channels.layers import get_channel_layer

from court.live import broadcast
from court.live.broadcast import PubSubPublisher, stream_to_group


async def test_messages_streamed_from_a_thread_arrive_in_order():
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("broadcast-order", channel)
    sender = threading.Thread(
        target=lambda: [stream_to_group("broadcast-order", {"type": "court.event", "n": n}) for n in range(200)]
    )
    sender.start()
    received = [(await asyncio.wait_for(layer.receive(channel), timeout=5))["n"] for _ in range(200)]
    sender.join()
    await layer.group_discard("broadcast-order", channel)
    assert received == list(range(200))


def test_a_send_that_fails_is_logged_not_raised(monkeypatch, caplog):
    class BrokenLayer:
        async def group_send(self, group, message):
            raise ConnectionError("Redis is gone")

    monkeypatch.setattr(broadcast, "get_channel_layer", BrokenLayer)
    stream_to_group("run.1", {"type": "court.event"})
    deadline = time.monotonic() + 5
    while "could not send" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.02)  # the failure is logged by the sending loop's thread
    assert "could not send to the channel layer" in caplog.text and "Redis is gone" in caplog.text


def pubsub_layer(address: str, settings):
    from channels_redis.pubsub import RedisPubSubChannelLayer

    return RedisPubSubChannelLayer(hosts=[{"address": address, **settings.CHANNEL_REDIS_OPTIONS}])


@pytest.mark.services
async def test_on_redis_pubsub_a_thread_publishes_what_the_layer_would_send(redis_url, settings):
    layer = pubsub_layer(redis_url, settings)
    assert isinstance(broadcast._publisher_for(layer), PubSubPublisher)
    channel = await layer.new_channel()
    await layer.group_add("run.7", channel)
    messages = [
        {
            "type": "court.event",
            "event": {
                "seq": n,
                "kind": "reasoning",
                "text": f"Schritt {n} \u2192 \U0001f680",
                "data": {"nested": [n, None, 1.5]},
            },
        }
        for n in range(200)
    ]
    sender = threading.Thread(target=lambda: [broadcast._publisher_for(layer).publish("run.7", m) for m in messages])
    sender.start()
    received = [await asyncio.wait_for(layer.receive(channel), timeout=5) for _ in messages]
    sender.join()
    await layer.flush()
    assert received == messages


@pytest.mark.services
def test_while_redis_is_unreachable_streamed_messages_are_dropped_at_once_and_counted(redis_url, settings, caplog):
    import redis

    publisher = PubSubPublisher(pubsub_layer("redis://127.0.0.1:1/0", settings))  # nothing listens on port 1
    with caplog.at_level(logging.ERROR, logger="court.live.broadcast"):
        publisher.publish("run.8", {"type": "court.event", "n": 1})
        assert "could not send to the channel layer" in caplog.text
        started = time.monotonic()
        for n in range(2, 5):  # within RETRY_AFTER_S of the failure: not tried, not waited for
            publisher.publish("run.8", {"type": "court.event", "n": n})
        assert time.monotonic() - started < 0.05
        # Redis is back once RETRY_AFTER_S has passed: the next message goes out, and the log says what was lost.
        publisher._clients = dict.fromkeys(publisher._clients, redis.Redis.from_url(redis_url))
        publisher._failed_at -= broadcast.RETRY_AFTER_S
        subscriber = redis.Redis.from_url(redis_url).pubsub()
        subscriber.subscribe(publisher._names._get_group_channel_name("run.8"))
        subscriber.get_message(timeout=1)  # the subscription's confirmation
        publisher.publish("run.8", {"type": "court.event", "n": 5})
    message = subscriber.get_message(timeout=2)
    subscriber.close()
    assert message is not None and publisher._serialize({"type": "court.event", "n": 5}) == message["data"]
    assert "3 messages were not sent live while the channel layer was unreachable" in caplog.text


def test_a_layer_other_than_redis_pubsub_is_sent_through_the_loop():
    from court.live.layers import ThreadSafeInMemoryChannelLayer

    assert broadcast._publisher_for(ThreadSafeInMemoryChannelLayer()) is None
