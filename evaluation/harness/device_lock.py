"""The device lock: verifications sharing one GPU overlap their builds and checks, never their
measurements."""

import contextlib
import fcntl
import time


class DeviceLock:
    """A readers-writer lock on a file (flock), shared by the verifications of one GPU.

    Work that only needs the GPU to be right (inspecting, building, checking) holds it shared, so
    several verifications overlap it; measurements hold it exclusive, so nothing else runs on the
    device while a sample is taken. A second file is a turnstile: a verification waiting for the
    exclusive lock holds it, so new shared holders queue behind that wait instead of starving it.
    Nobody waits for one lock while holding the other, so it cannot deadlock. With no path the
    lock does nothing (one verification per device, as a worker runs them)."""

    def __init__(self, path: str | None):
        self.path = path
        self.mode = None
        self.waited_s = 0.0
        self._main = self._turnstile = None

    def __enter__(self):
        if self.path:
            self._main = open(self.path, "a")
            self._turnstile = open(self.path + ".turnstile", "a")
            self._take(fcntl.LOCK_SH)
        return self

    def __exit__(self, *exc):
        if self._main is not None:
            fcntl.flock(self._main, fcntl.LOCK_UN)
            self._main.close()
            self._turnstile.close()
            self._main = self._turnstile = None
            self.mode = None

    def _take(self, mode: int) -> None:
        began = time.monotonic()
        fcntl.flock(self._turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(self._main, mode)
        finally:
            fcntl.flock(self._turnstile, fcntl.LOCK_UN)
        self.waited_s += time.monotonic() - began
        self.mode = mode

    def checkpoint(self) -> None:
        """Between two steps: a measurement waiting for the device goes first. Without a waiter the
        shared lock is taken back at once; with one, after its measurement. The processes are idle
        between steps, so nothing of this verification runs on the GPU meanwhile."""
        if self._main is None or self.mode != fcntl.LOCK_SH:
            return
        fcntl.flock(self._main, fcntl.LOCK_UN)
        self._take(fcntl.LOCK_SH)

    @contextlib.contextmanager
    def exclusive(self):
        """The device to this verification alone, then back to shared."""
        if self._main is None or self.mode == fcntl.LOCK_EX:
            yield
            return
        fcntl.flock(self._main, fcntl.LOCK_UN)
        self._take(fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._main, fcntl.LOCK_UN)
            self._take(fcntl.LOCK_SH)
