"""The private channel between the harness and a sandboxed process: JSON lines over a socket pair.

The socket's end is a file descriptor handed to the sandboxed process at start; its stdout and stderr go to
a log file and are never parsed. Code running inside that process can still write to it, so
the parent treats every message as a claim: it checks each reply's nonce and its wall-clock
plausibility, and builds the verdict itself.
"""

import json
import os
import select
import time
from collections.abc import Callable
from typing import Any

# A reply larger than this is not a harness message (outputs travel on links of their own, not this channel).
MAX_MESSAGE_BYTES = 8 * 2**20
POLL_INTERVAL_S = 0.05


class ChannelClosed(Exception):
    """The other end closed its socket (it exited or crashed)."""


class ChannelTimeout(Exception):
    """No complete message arrived before the deadline."""


class ChannelGarbage(Exception):
    """Something that is not a harness message arrived."""


class Channel:
    def __init__(self, read_fd: int, write_fd: int):
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._buffer = b""
        self._polled_at = time.monotonic()

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        view = memoryview(data)
        while view:
            written = os.write(self._write_fd, view)
            view = view[written:]

    def receive(self, timeout: float | None = None, *, poll: Callable[[], object] | None = None) -> dict[str, Any]:
        """The next message; `poll()` (the watchdog) is called about every 50 ms of waiting, counted
        across messages, and not after every quick reply: reading a process tree's memory from
        /proc costs a millisecond, and a timing loop receives hundreds of replies a second."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            wait = POLL_INTERVAL_S
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ChannelTimeout()
                wait = min(wait, left)
            ready, _, _ = select.select([self._read_fd], [], [], wait)
            if poll is not None and time.monotonic() - self._polled_at >= POLL_INTERVAL_S:
                self._polled_at = time.monotonic()
                poll()
            if not ready:
                continue
            chunk = os.read(self._read_fd, 1 << 20)
            if not chunk:
                raise ChannelClosed()
            self._buffer += chunk
            if len(self._buffer) > MAX_MESSAGE_BYTES and b"\n" not in self._buffer:
                raise ChannelGarbage("a message longer than the channel allows")
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise ChannelGarbage(f"not a harness message: {line[:80]!r}") from exc
        if not isinstance(message, dict):
            raise ChannelGarbage(f"not an object: {line[:80]!r}")
        return message

    def pending(self) -> bool:
        """Whether more bytes wait unread: after a reply, there should be none."""
        if self._buffer:
            return True
        ready, _, _ = select.select([self._read_fd], [], [], 0)
        return bool(ready)

    def close(self) -> None:
        # Once each: a socket's one descriptor serves both ways, and a number closed twice may by then
        # name another thread's file.
        for fd in {self._read_fd, self._write_fd}:
            try:
                os.close(fd)
            except OSError:
                pass
