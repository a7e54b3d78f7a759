"""The embedded channel layer delivers at once what a worker thread sends while a consumer waits.

(Channels' own InMemoryChannelLayer fails this test most of the time: the consumer's loop is woken
only by whatever else happens to wake it. It is not asserted here because "most of the time" is
not a result a test can hold to.)
"""

import asyncio
import threading
import time

from asgiref.sync import async_to_sync

from kernels.live.layers import ThreadSafeInMemoryChannelLayer


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
