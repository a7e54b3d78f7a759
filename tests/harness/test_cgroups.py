"""The candidate's control group: frozen, nothing of it runs; its CPU time counts threads that exited.

Real groups of this host (the harness runs as root in CI); skipped where the host gives none.
"""

import subprocess
import sys
import time

import pytest

from evaluation.harness import cgroups

# A thread that burns the CPU for about 0.3 s and exits, then the process sleeps.
BURN_AND_EXIT = (
    "import threading, time\n"
    "def burn():\n"
    "    end = time.monotonic() + 0.3\n"
    "    while time.monotonic() < end: pass\n"
    "t = threading.Thread(target=burn); t.start(); t.join()\n"
    "print('burnt', flush=True)\n"
    "time.sleep(60)\n"
)
BURN_FOREVER = "while True: pass\n"


@pytest.fixture
def group():
    made = cgroups.create("test", memory_bytes=2**30, processes=64)
    if made is None or made.freezer is None or made.cpu is None:
        pytest.skip("this host gives the harness no control group with a freezer and CPU accounting")
    yield made
    made.thaw()
    made.remove()


def _start(group, code: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(group.enter([sys.executable, "-c", code]), **kwargs)


def test_a_frozen_group_runs_nothing(group):
    process = _start(group, BURN_FOREVER)
    try:
        time.sleep(0.2)
        assert group.freeze()
        frozen_at = group.cpu_ns()
        time.sleep(0.3)
        assert group.cpu_ns() - frozen_at < 5e6
        group.thaw()
        time.sleep(0.2)
        assert group.cpu_ns() - frozen_at > 50e6
    finally:
        group.thaw()
        process.kill()
        process.wait()


def test_the_cpu_of_a_thread_that_exited_still_counts(group):
    process = _start(group, BURN_AND_EXIT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "burnt"
        # The live threads hold only the main thread's time now; the group's count holds the burner's.
        assert group.cpu_ns() >= 250e6
    finally:
        process.kill()
        process.wait()
