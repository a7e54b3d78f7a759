"""The device lock: one verification on a device at a time, start-up to end.

flock locks belong to an open file, so threads that each open the lock file contend like
processes would.
"""

import threading
import time

from evaluation.harness.device_lock import DeviceLock


def _verification(path: str, events: list, name: str, seconds: float) -> threading.Thread:
    """Another verification's device phase, in a thread: it notes when it starts and ends."""

    def run():
        with DeviceLock(path):
            events.append(f"{name}-start")
            time.sleep(seconds)
            events.append(f"{name}-end")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_two_verifications_of_one_device_never_overlap(tmp_path):
    path = str(tmp_path / "gpu.lock")
    events = []

    first = _verification(path, events, "a", 0.3)
    time.sleep(0.05)
    second = _verification(path, events, "b", 0.1)
    first.join(5)
    second.join(5)

    assert events == ["a-start", "a-end", "b-start", "b-end"]


def test_the_wait_is_counted(tmp_path):
    path = str(tmp_path / "gpu.lock")
    holder = DeviceLock(path).__enter__()
    threading.Timer(0.2, holder.__exit__, (None, None, None)).start()

    with DeviceLock(path) as waiting:
        assert waiting.waited_s >= 0.15


def test_without_a_path_it_is_a_no_op():
    with DeviceLock(None) as lock:
        assert lock.waited_s == 0.0
