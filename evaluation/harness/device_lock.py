"""The device lock: one verification on a device at a time, from its processes' first touch of the
device to their end.

Verifications that shared a GPU (the batch's `--parallel`) used to overlap everything but their timing:
another verification's start-up, checks and builds then ran on the device while one was timed, and
`no_hidden_work` read that work as the timed candidate's (an honest kernel rejected, RESULTS.md,
harness 11). Now only what touches no device overlaps: starting the sandboxes and importing torch.
"""

import fcntl
import time
from typing import Self, TextIO


class DeviceLock:
    """An exclusive lock on a file (flock), held by one verification of a device at a time. flock
    locks belong to an open file, so threads that each open it contend like processes. With no path
    it does nothing (a worker process runs its verifications one at a time on its own device)."""

    def __init__(self, path: str | None):
        self.path = path
        self.waited_s = 0.0
        self._file: TextIO | None = None

    def __enter__(self) -> Self:
        if self.path:
            began = time.monotonic()
            self._file = open(self.path, "a")
            fcntl.flock(self._file, fcntl.LOCK_EX)
            self.waited_s += time.monotonic() - began
        return self

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None
