"""The device lock that lets verifications share a GPU: checks overlap, measurements never do.

flock locks belong to an open file, so threads that each open the lock file contend like
processes would.
"""

import threading
import time

from evaluation.harness.device_lock import DeviceLock


def _in_thread(target):
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def _wait_for(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def test_shared_holders_overlap(tmp_path):
    path = str(tmp_path / "gpu.lock")
    with DeviceLock(path), DeviceLock(path) as second:
        assert second.waited_s < 1.0


def _measurement(path: str, events: list, seconds: float = 0.0):
    """Another verification's timing loop, in a thread: it notes when it starts and ends."""

    def measure():
        with DeviceLock(path) as lock, lock.exclusive():
            events.append("measure-start")
            time.sleep(seconds)
            events.append("measure-end")

    return _in_thread(measure)


def test_a_measurement_waits_for_shared_holders_and_excludes_new_ones(tmp_path):
    path = str(tmp_path / "gpu.lock")
    events = []
    first = DeviceLock(path).__enter__()

    def check():
        with DeviceLock(path):
            events.append("check")

    measurer = _measurement(path, events, 0.3)
    time.sleep(0.3)
    assert events == [], "the measurement started while another verification held the device"
    # A verification arriving now queues behind the waiting measurement instead of starving it.
    checker = _in_thread(check)
    time.sleep(0.3)
    assert events == []
    first.__exit__(None, None, None)
    measurer.join(5)
    checker.join(5)
    assert events == ["measure-start", "measure-end", "check"]


def test_exclusive_returns_to_shared(tmp_path):
    path = str(tmp_path / "gpu.lock")
    with DeviceLock(path) as lock:
        with lock.exclusive():
            pass
        other = []
        thread = _in_thread(lambda: other.append(DeviceLock(path).__enter__()))
        _wait_for(lambda: other)
        thread.join(1)
        other[0].__exit__(None, None, None)


def test_without_a_path_it_is_a_no_op(tmp_path):
    with DeviceLock(None) as lock, lock.exclusive():
        assert lock.waited_s == 0.0


def test_a_holder_gives_way_to_a_waiting_measurement_between_steps(tmp_path):
    path = str(tmp_path / "gpu.lock")
    events = []
    holder = DeviceLock(path).__enter__()

    measurer = _measurement(path, events)
    time.sleep(0.3)
    assert events == [], "the measurement started while another verification was in a step"
    holder.checkpoint()  # the holder's step ends: the measurement runs, then the holder goes on
    events.append("next step")
    measurer.join(5)
    holder.__exit__(None, None, None)
    assert events == ["measure-start", "measure-end", "next step"]


def test_a_checkpoint_without_a_waiter_keeps_the_device(tmp_path):
    path = str(tmp_path / "gpu.lock")
    with DeviceLock(path) as lock:
        lock.checkpoint()
        assert lock.waited_s < 1.0
