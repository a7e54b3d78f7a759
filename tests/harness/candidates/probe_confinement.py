import ctypes
import hashlib
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
    with open("/proc/self/mountinfo") as table:
        for line in table:
            fields = line.split()
            found.append([fields[4], fields[5].split(",")[0], line.split(" - ")[1].split()[0]])
    return sorted(found)


def canonical(value):
    if isinstance(value, (set, frozenset)):
        return sorted(map(canonical, value), key=repr)
    if isinstance(value, dict):
        return sorted((repr(k), canonical(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return repr(value)


def digest(value):
    return hashlib.sha256(repr(canonical(value)).encode()).hexdigest()[:16]


def paths_in_modules():
    # Paths torch and its modules computed when they were imported (from the working folder, the
    # home, the temporary folder): a process that imported them elsewhere would hold others.
    found = []
    for name, module in sorted(sys.modules.items()):
        if not name.startswith(("torch", "triton")) or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, str) and value.startswith("/") and len(value) < 300:
                found.append((name, attr, value))
    return found


def torch_state():
    import torch._dynamo
    import torch._inductor.config

    return {
        "threads": torch.get_num_threads(),
        "default_dtype": str(torch.get_default_dtype()),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "matmul_precision": torch.get_float32_matmul_precision(),
        "dynamo_config": digest(sorted(torch._dynamo.config.get_config_copy().items())),
        "inductor_config": digest(sorted(torch._inductor.config.get_config_copy().items())),
        "modules": digest(sorted(name for name in sys.modules if not name.startswith("evaluation"))),
        "paths_in_modules": [len(paths_in_modules()), digest(paths_in_modules())],
    }


def home_files():
    # Not inside what is bound there (the Python environment, where a checkout lives under /work).
    home, found = os.environ["HOME"], []
    for top, dirs, files in os.walk(home):
        dirs[:] = [name for name in dirs if not os.path.ismount(os.path.join(top, name))]
        found += [os.path.relpath(os.path.join(top, name), home) for name in dirs + files]
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
    "torch": torch_state(),
    # What is in its home and working folder before it writes there: a module that made a file there
    # at import would have made it elsewhere in a process forked with that module preloaded.
    "home_files": home_files(),
    "path_outside_the_sandbox": [p for p in sys.path if p and not os.path.exists(p)],
}
for key, value in sorted(facts.items()):
    print("CONFINEMENT", key, json.dumps(value))


class ModelNew(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)
