"""Sending to a page group from plain threads without waiting: in order, and failures logged."""

import asyncio
import threading
import time

from channels.layers import get_channel_layer

from kernels import broadcast
from kernels.broadcast import group_send_soon


async def test_messages_handed_over_without_waiting_arrive_in_order():
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("broadcast-order", channel)
    sender = threading.Thread(
        target=lambda: [group_send_soon("broadcast-order", {"type": "arena.event", "n": n}) for n in range(200)]
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
    group_send_soon("run.1", {"type": "arena.event"})
    deadline = time.monotonic() + 5
    while "could not send" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.02)  # the failure is logged by the sending loop's thread
    assert "could not send to the channel layer" in caplog.text and "Redis is gone" in caplog.text
