"""What a fork server would save the sandboxed processes (README: the suite is bound by their torch
imports). In one run, each way of starting a process that has torch and has run one small operator:

  exec      a new interpreter importing torch (what every sandboxed process does today)
  fork      a child forked from a parent that imported torch once
  fork+ns   the same child entering new user, mount, PID, network, IPC and UTS namespaces first
            (what a fork server's child would do before binding its verification's files)

Each child's CPU (user + system) comes from wait4's resource usage; the table gives the median of
--runs children and each way's ratio to `exec`.

    .venv/bin/python benchmarks/fork_cost.py --runs 10
"""

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import time

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = (
    0x00020000,
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
)
WORK = "torch.ones(64, 64).matmul(torch.ones(64, 64)).sum().item()"


def _cpu(usage) -> float:
    return usage.ru_utime + usage.ru_stime


def exec_child() -> tuple[float, float]:
    began = time.monotonic()
    process = subprocess.Popen([sys.executable, "-I", "-c", f"import torch; {WORK}"])
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0
    return _cpu(usage), time.monotonic() - began


def fork_child(namespaces: bool) -> tuple[float, float]:
    import torch  # noqa: F401  (imported once, in the parent, before the fork)

    began = time.monotonic()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            if namespaces:
                libc = ctypes.CDLL(None, use_errno=True)
                flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
                if libc.unshare(flags) != 0:
                    raise OSError(ctypes.get_errno(), "unshare")
            eval(WORK)
        except BaseException as exc:  # noqa: BLE001  (the child reports and exits; never returns)
            print(f"child failed: {exc!r}", file=sys.stderr)
            code = 1
        os._exit(code)
    _, status, usage = os.wait4(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return _cpu(usage), time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)  # one thread, so that a forked child's pool is not a parent's copy
    ways = {"exec": exec_child, "fork": lambda: fork_child(False), "fork+ns": lambda: fork_child(True)}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
    for _ in range(args.runs):  # interleaved, so that a busy moment of the host falls on every way
        for name, way in ways.items():
            results[name].append(way())
    base = statistics.median(cpu for cpu, _ in results["exec"])
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {args.runs} children each")
    print("| way | CPU s (median) | wall s (median) | CPU against exec |")
    print("| --- | --- | --- | --- |")
    for name, rows in results.items():
        cpu = statistics.median(c for c, _ in rows)
        wall = statistics.median(w for _, w in rows)
        print(f"| {name} | {cpu:.3f} | {wall:.3f} | {cpu / base:.3f} |")


if __name__ == "__main__":
    main()
