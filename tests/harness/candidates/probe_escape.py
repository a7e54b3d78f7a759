import ctypes
import os
import socket
import stat
import sys

import torch
import torch.nn as nn

# Everything a candidate running as root on the host would try, each attempt's outcome printed for
# the test to read: what it can read, write, reach and become. Every attempt must be refused.


def attempt(name, action):
    try:
        result = action()
        print(f"ESCAPE {name}: succeeded {str(result)[:120]!r}")
    except BaseException as exc:  # noqa: BLE001
        print(f"ESCAPE {name}: refused {type(exc).__name__}")


def write(path):
    with open(path, "w") as handle:
        handle.write("planted")
    return path


def listing(path):
    return sorted(os.listdir(path))


libc = ctypes.CDLL(None, use_errno=True)


def syscall_ok(result):
    if result != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return result


def nonempty(found):
    if not found:
        raise LookupError("nothing")
    return found


def secret_in_environments():
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if b"SECRET_PLACEHOLDER" in open(f"/proc/{pid}/environ", "rb").read():
                    found.append(pid)
            except OSError:
                pass
    return nonempty(found)


REPO = "/work/main"
harness_file = sys.modules["evaluation.harness.sandboxed.timing"].__file__
attempt("read /etc/shadow", lambda: open("/etc/shadow").read())
attempt("read the app's settings", lambda: open(os.path.join(REPO, "config", "settings.py")).read())
attempt("read the app's database", lambda: listing(os.path.join(REPO, "var")))
attempt("read the harness's own cache", lambda: listing("/root/.cache"))
attempt("read a secret of the worker's environment", secret_in_environments)
attempt("see other processes", lambda: nonempty([p for p in os.listdir("/proc") if p.isdigit() and int(p) > 2 and int(p) != os.getpid()]))
attempt("write the harness's source", lambda: write(harness_file))
attempt("write /usr", lambda: write("/usr/planted"))
attempt("write the Python environment", lambda: write(os.path.join(os.path.dirname(os.__file__), "planted.py")))
with open("/tmp/TMP_PLACEHOLDER", "w") as planted:  # its own /tmp: the test looks for it on the host
    planted.write("planted")
attempt("reach PostgreSQL", lambda: socket.create_connection(("127.0.0.1", 5432), timeout=2))
attempt("reach Redis", lambda: socket.create_connection(("127.0.0.1", 6379), timeout=2))
attempt("reach the internet", lambda: socket.create_connection(("1.1.1.1", 53), timeout=2))
attempt("unshare a user namespace", lambda: syscall_ok(libc.unshare(0x10000000)))
attempt("unshare a network namespace", lambda: syscall_ok(libc.unshare(0x40000000)))
attempt("mount a tmpfs", lambda: syscall_ok(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)))
attempt("unmount /proc", lambda: syscall_ok(libc.umount2(b"/proc", 2)))
attempt("setns into init's network", lambda: syscall_ok(libc.setns(os.open("/proc/1/ns/net", os.O_RDONLY), 0)))
attempt("become root", lambda: syscall_ok(libc.setuid(0)))


def reopen_channels():
    # The harness's links to this process (descriptors it was started with) opened a second time
    # through /proc: a pipe's other end would read or write what was meant for another process.
    reopened = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if stat.S_ISFIFO(os.fstat(int(name)).st_mode) or stat.S_ISSOCK(os.fstat(int(name)).st_mode):
                os.close(os.open(f"/proc/self/fd/{name}", os.O_RDONLY | os.O_NONBLOCK))
                reopened.append(name)
        except OSError:
            continue
    return nonempty(reopened)


attempt("read its own memory through /proc/self/mem", lambda: open("/proc/self/mem", "rb"))
attempt("reopen a harness channel through /proc/self/fd", reopen_channels)
status = open("/proc/self/status").read()
print("ESCAPE uid", os.getuid(), "caps", [line.split()[1] for line in status.splitlines() if line.startswith("CapEff")][0],
      "no_new_privs", [line.split()[1] for line in status.splitlines() if line.startswith("NoNewPrivs")][0])


class ModelNew(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)
