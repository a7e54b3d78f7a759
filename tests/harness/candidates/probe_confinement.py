import ctypes
import json
import os
import resource
import socket
import stat
import sys

import torch
import torch.nn as nn

# What confines this process, as it sees it, for the test to compare between a process started by
# exec and one forked from the fork server: they must not differ but in their own PIDs.


def descriptors():
    found = []
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            mode = os.fstat(int(name)).st_mode
        except OSError:
            continue  # the listing's own
        kind = "socket" if stat.S_ISSOCK(mode) else "pipe" if stat.S_ISFIFO(mode) else "char" if stat.S_ISCHR(mode) else "file"
        found.append([int(name), kind])
    return found


def status_fields():
    keep = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")
    return [line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if line.startswith(keep)]


def mounts():
    found = []
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        found.append([fields[4], fields[5].split(",")[0], line.split(" - ")[1].split()[0]])
    return sorted(found)


facts = {
    "status": status_fields(),
    "dumpable": ctypes.CDLL(None).prctl(3, 0, 0, 0, 0),
    "rlimits": {
        name: resource.getrlimit(getattr(resource, name))
        for name in ("RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_NPROC")
    },
    "environment": sorted(os.environ.items()),
    "cwd": os.getcwd(),
    "umask": os.umask(0o022),
    "session_leader": os.getsid(0) == os.getpid(),
    "descriptors": descriptors(),
    "mounts": mounts(),
    "root": sorted(os.listdir("/")),
    "processes": len([p for p in os.listdir("/proc") if p.isdigit()]),
    "hostname": socket.gethostname(),
    "flags": [sys.flags.isolated, sys.flags.dont_write_bytecode, sys.flags.hash_randomization, sys.pycache_prefix],
    "path_outside_the_sandbox": [p for p in sys.path if p and not os.path.exists(p)],
}
for key, value in sorted(facts.items()):
    print("CONFINEMENT", key, json.dumps(value))


class ModelNew(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)
