"""Sending to the pages' channel-layer groups from synchronous code (jobs, run loops, views).

`async_to_sync(layer.group_send)` called from a plain thread starts a new thread and a new event
loop for every call, and the Redis layer opens a connection pool per loop: each message paid for a
thread, a loop and a TCP connection. A run streaming tokens sends hundreds of messages a second,
so here one long-lived loop per process, in a daemon thread, sends them all over the same pool.
"""

import asyncio
import logging
import threading
from collections.abc import Callable

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

# Long enough for a busy Redis; a send that takes longer is reported to the caller as failed.
SEND_TIMEOUT_S = 10

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


def group_send_soon(group: str, message: dict) -> None:
    """Hand `message` for `group` to this process's sending loop and return at once; a failure is
    logged. Messages handed over from one thread are sent in that order (the loop starts them in
    order and the layer's connection sends one at a time, first come first served). For streams
    of many messages (a run's transcript): waiting for each cost a cross-thread future and two
    thread switches per message; the future's callbacks alone were ~12% of an inference worker's
    interpreter time at 1000 messages a second (benchmarks/RESULTS.md, streaming latency)."""
    layer = get_channel_layer()
    if layer is None:
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
