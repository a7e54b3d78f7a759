"""The candidate's control group: frozen, nothing of it runs; its CPU time counts threads that exited.

Real groups of this host (the harness runs as root in CI); skipped where the host gives none.
"""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluation.harness import cgroups

# A thread that burns 0.3 s of CPU (its own, however loaded the host) and exits, then the process sleeps.
BURN_AND_EXIT = (
    "import threading, time\n"
    "def burn():\n"
    "    while time.thread_time() < 0.3: pass\n"
    "t = threading.Thread(target=burn); t.start(); t.join()\n"
    "print('burnt', flush=True)\n"
    "time.sleep(60)\n"
)
BURN_FOREVER = "while True: pass\n"


UNIFIED = Path("/sys/fs/cgroup/unified")


@pytest.fixture(params=["host", "v2 without controllers"])
def group(request, monkeypatch):
    if request.param != "host":
        # A cgroup v2 hierarchy whose own group gives its children no controllers (a lent GPU machine's,
        # a container's): this host's hybrid mount, where the root has none to give.
        if not (UNIFIED / "cgroup.controllers").exists():
            pytest.skip("this host mounts no cgroup v2 hierarchy beside its v1 ones")
        monkeypatch.setattr(cgroups, "ROOT", UNIFIED)
        monkeypatch.setattr(cgroups, "_create_v1", lambda *args: None)
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
        deadline = time.monotonic() + 10
        while group.cpu_ns() - frozen_at < 50e6 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert group.cpu_ns() - frozen_at >= 50e6
    finally:
        group.thaw()
        process.kill()
        process.wait()


def test_the_cpu_of_a_thread_that_exited_still_counts(group):
    process = _start(group, BURN_AND_EXIT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "burnt"
        # The live threads hold only the main thread's time now; the group's count holds the burner's.
        assert group.cpu_ns() >= 300e6
    finally:
        process.kill()
        process.wait()
