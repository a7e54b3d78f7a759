"""The embedded channel layer delivers at once what a worker thread sends while a consumer waits.

(Channels' own InMemoryChannelLayer fails this test most of the time: the consumer's loop is woken
only by whatever else happens to wake it. It is not asserted here because "most of the time" is
not a result a test can hold to.)
"""

import asyncio
import threading
import time
import uuid

from asgiref.sync import async_to_sync

from court.live.layers import ThreadSafeInMemoryChannelLayer
from tests.config.environments import loaded


async def delivery_from_a_thread(layer) -> tuple[dict | None, float]:
    """The message a thread sends to a group, as its member receives it, and how long it took."""
    channel = await layer.new_channel()
    await layer.group_add("run.1", channel)
    waiting = asyncio.ensure_future(layer.receive(channel))
    await asyncio.sleep(0.05)  # the consumer is asleep in receive, as a quiet page's socket is
    sent_at = time.monotonic()
    threading.Thread(target=async_to_sync(layer.group_send), args=("run.1", {"type": "court.event", "n": 1})).start()
    try:
        message = await asyncio.wait_for(waiting, timeout=2)
    except TimeoutError:
        message = None
    return message, time.monotonic() - sent_at


async def test_a_message_sent_from_a_worker_thread_wakes_the_waiting_consumer():
    message, seconds = await delivery_from_a_thread(ThreadSafeInMemoryChannelLayer())
    assert message == {"type": "court.event", "n": 1}
    assert seconds < 0.5


async def heard(listener, sender, group: str) -> dict | None:
    """What a member of `group` on `listener` receives when `sender` sends to that group (None if nothing in a second)."""
    channel = await listener.new_channel()
    await listener.group_add(group, channel)
    try:
        await asyncio.sleep(0.2)  # Redis has the subscription before the send
        await sender.group_send(group, {"type": "court.event", "n": 1})
        return await asyncio.wait_for(listener.receive(channel), timeout=1)
    except TimeoutError:
        return None
    finally:
        await listener.group_discard(group, channel)


async def test_platforms_on_two_databases_of_one_redis_server_do_not_hear_each_other(redis_url, tmp_path):
    """Redis's Pub/Sub ignores the database number; the layer the settings configure must not."""
    from channels_redis.pubsub import RedisPubSubChannelLayer

    base = redis_url.rpartition("/")[0]
    configs = [loaded(tmp_path, REDIS_URL=f"{base}/{database}")["layer_config"] for database in (3, 4)]
    first, second, first_again = (RedisPubSubChannelLayer(**config) for config in (*configs, configs[0]))
    group = f"run.{uuid.uuid4().hex}"  # no other test hears it
    try:
        assert await heard(first, first_again, group) == {"type": "court.event", "n": 1}
        assert await heard(first, second, group) is None
    finally:
        for layer in (first, second, first_again):
            await layer.flush()
