"""The embedded mode's channel layer: Channels' in-memory layer, safe to send to from any thread.

In embedded mode the run loops and evaluations run in worker threads of the web process and
publish through `court.live.broadcast`, whose event loop runs in a thread of its own.
Channels' InMemoryChannelLayer puts the message straight into the receiving consumer's
asyncio.Queue, and waking a waiter from a foreign thread is not thread-safe: the consumer's loop
is not woken and the event sits there until something else wakes it. This layer remembers which
loop receives on each channel and hands every send for that channel to that loop.
"""

import asyncio

from channels.layers import InMemoryChannelLayer


class ThreadSafeInMemoryChannelLayer(InMemoryChannelLayer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._receiving_loops: dict[str, asyncio.AbstractEventLoop] = {}

    async def receive(self, channel):
        self._receiving_loops[channel] = asyncio.get_running_loop()
        return await super().receive(channel)

    async def send(self, channel, message):
        owner = self._receiving_loops.get(channel)
        if owner is None or owner is asyncio.get_running_loop() or not owner.is_running():
            return await super().send(channel, message)
        future = asyncio.run_coroutine_threadsafe(super().send(channel, message), owner)
        return await asyncio.wrap_future(future)

    def _remove_from_groups(self, channel):
        self._receiving_loops.pop(channel, None)
        super()._remove_from_groups(channel)

    async def flush(self):
        self._receiving_loops.clear()
        await super().flush()
