"""Whether a run's requester asked it to stop, asked of the database once for all of a process's runs.

A run loop checks before every delta it streams (inference.actors). Asked per run every
POLL_SECONDS, 50 runs cost the database 100 queries a second, due together when the runs started
together (benchmarks/RESULTS.md, streaming latency). Here the first run to check after
POLL_SECONDS asks about every run this process is streaming, in one query, and the others take
its answer: a cancel is still seen within POLL_SECONDS (plus one delta).
"""

import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from court.models import OptimizationRun

# How old an answer may be: a cancel takes effect within this (the cancel button says "within a
# second or so").
POLL_SECONDS = 0.5


class CancelRequests:
    def __init__(self, interval_s: float):
        self.interval_s = interval_s
        self._watched: set[int] = set()
        self._requested: set[int] = set()
        self._asked_at = -math.inf
        self._lock = threading.Lock()  # guards the sets
        self._asking = threading.Lock()  # one query at a time; the others use the last answer

    @contextmanager
    def watching(self, run_id: int) -> Iterator[None]:
        """While this is open, `requested(run_id)` is answered with the other runs' query."""
        with self._lock:
            self._watched.add(run_id)
        try:
            yield
        finally:
            with self._lock:
                self._watched.discard(run_id)
                self._requested.discard(run_id)

    def requested(self, run_id: int) -> bool:
        """Whether a cancel of the watched run was requested, as the database said at most
        `interval_s` ago (the first call asks at once)."""
        if run_id not in self._requested and self._stale() and self._asking.acquire(blocking=False):
            try:
                if self._stale():
                    self._ask()
            finally:
                self._asking.release()
        return run_id in self._requested

    def _stale(self) -> bool:
        return time.monotonic() - self._asked_at > self.interval_s

    def _ask(self) -> None:
        with self._lock:
            watched = list(self._watched)
        requested = OptimizationRun.objects.filter(pk__in=watched, cancel_requested_at__isnull=False)
        answer = set(requested.values_list("pk", flat=True))
        self._asked_at = time.monotonic()
        with self._lock:
            self._requested |= answer & self._watched


cancel_requests = CancelRequests(POLL_SECONDS)
