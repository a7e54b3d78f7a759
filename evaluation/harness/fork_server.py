"""Sandboxed processes forked from a server that imported torch once, instead of a new interpreter
importing it in every process (1.5-2 CPU-s each, three or more per verification: half the test
suite's CPU; RESULTS.md, "What a fork server would save").

bubblewrap still builds every sandbox. For each process the harness starts a holder in a bubblewrap
sandbox exactly as the exec path would (same view, namespaces, control group; the holder is `sleep`),
then asks the server for a process to put inside it. The server forks a keeper, which joins the
holder's control group, then its user, mount, network, IPC, UTS, cgroup and PID namespaces (as
`nsenter` does) and its root, and forks the process proper: PID 3 of that sandbox, in a session of
its own, which keeps only the descriptors the harness gave it, drops every capability and its
bounding set, sets no new privileges, and then runs the exec path's own first step (`confine_self`:
uid 65534, limits, not dumpable) before it imports the role's module from inside the sandbox.

What a reviewer can check here:
- The server and the keeper run no user code: the server imports torch and the standard library
  and takes requests only from the harness's end of a socket pair; a keeper only enters, forks and
  waits. User code runs only in the forked process, after `_become` confined it.
- The forked process holds no descriptor of the server's or the keeper's (every one is closed but
  those the request names, placed at the numbers the exec path would give them) and no capability;
  its PID namespace holds neither the server nor its keeper, so it can signal or trace neither.
- Its exit status reaches the harness from the keeper, on a pipe whose write end the forked process
  never holds; its death closes its channel, as on the exec path (the keeper holds no copy).
- The sandbox dies with its holder: killing the holder's tree ends the PID namespace, the forked
  process with it.
- Nothing in the server's memory is a secret: it is a fresh interpreter with torch imported and the
  requests it forwarded (paths, limits, the sandbox's environment); keys travel as descriptors.
"""

import ctypes
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

# Namespaces in the order they are joined: the user namespace first (joining it grants the
# capabilities the others need in it), the PID namespace last (it applies to the next child only).
NAMESPACES = (
    ("user", 0x10000000),
    ("mnt", 0x00020000),
    ("net", 0x40000000),
    ("ipc", 0x08000000),
    ("uts", 0x04000000),
    ("cgroup", 0x02000000),
    ("pid", 0x20000000),
)
_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_CAPABILITY_VERSION_3 = 0x20080522
_MAX_FDS = 250
# What a holder runs in its bubblewrap sandbox: it says when the sandbox is built, then waits.
HOLDER = ["/bin/sh", "-c", "echo ready; exec sleep infinity"]
_REQUEST_BYTES = 1 << 20


class ForkRefused(RuntimeError):
    """The server could not put a process into the sandbox; the harness starts one by exec instead."""


# -- the server ------------------------------------------------------------------------------------


def serve(fd: int) -> None:
    """The server's loop (`python -I -c ...`): fork a keeper for each request, until the harness's
    end closes. Single-threaded: a fork copies only the calling thread."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # keepers are reaped by the kernel
    # Not PR_SET_PDEATHSIG: it follows the thread that started the server, and a harness's threads
    # share it. The harness's end closes when its process ends, however it ends: the loop stops then,
    # and each keeper (and with it its process) dies with the server.
    server = socket.socket(fileno=fd)
    server.sendall(b"ready")
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(server, _REQUEST_BYTES, _MAX_FDS)
        except OSError:
            return
        if not data:
            return
        request = json.loads(data)
        if os.fork() == 0:
            code = 1
            try:
                server.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                code = _keep(request, fds)
            finally:
                os._exit(code)
        for descriptor in fds:
            os.close(descriptor)


def _keep(request: dict[str, Any], fds: list[int]) -> int:
    """The keeper: enter the holder's sandbox, fork the process proper, report its PID and exit status."""
    names = request["fds"]
    named = dict(zip(names, fds, strict=True))
    status = named.pop("status")
    report = os.fdopen(status, "w", buffering=1)
    try:
        _die_with_parent()
        for procs in request["cgroup_procs"]:
            Path(procs).write_text(str(os.getpid()))
        libc = ctypes.CDLL(None, use_errno=True)
        for name, kind in NAMESPACES:
            if name in named:
                descriptor = named.pop(name)
                if libc.setns(descriptor, kind) != 0:
                    raise OSError(ctypes.get_errno(), f"setns({name})")
                os.close(descriptor)
            elif name != "cgroup":  # bubblewrap makes a cgroup namespace only where it can
                raise OSError(f"the holder has no {name} namespace")
        os.fchdir(named["root"])
        os.chroot(".")
        os.close(named.pop("root"))
        pid = os.fork()
    except OSError as exc:
        report.write(f"error {exc}\n")
        return 1
    if pid == 0:
        report.close()
        _become(request, named)  # never returns
    report.write(f"pid {pid}\n")
    for descriptor in named.values():
        os.close(descriptor)
    _, wait_status = os.waitpid(pid, 0)
    report.write(f"exit {os.waitstatus_to_exitcode(wait_status)}\n")
    return 0


def _become(request: dict[str, Any], named: dict[str, int]) -> None:
    """The process proper, PID 3 of the sandbox: confined before any user code runs, then its role."""
    code = 1
    try:
        os.setsid()
        _die_with_parent()
        log = named.pop("log")
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        # Each kept descriptor at the number the exec path gives it, everything else closed.
        import fcntl

        moved = {int(number): fcntl.fcntl(fd, fcntl.F_DUPFD, 1024) for number, fd in named.items()}
        keep = sorted(moved.values())
        for low, high in zip([2, *keep], [*keep, os.sysconf("SC_OPEN_MAX")], strict=True):
            os.closerange(low + 1, high)
        for number, fd in moved.items():
            os.dup2(fd, number, inheritable=True)
            os.close(fd)
        _reopen_standard_streams()
        os.umask(request["umask"])
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"], PWD=request["cwd"])  # as bubblewrap's --chdir sets it
        sys.argv = ["-c", request["module"], json.dumps(request["settings"])]
        _forget_the_server(request)
        _drop_bounding_set()
        _keep_capabilities(request["keep_capabilities"])
        settings = request["settings"]
        from evaluation.harness.sandbox_child import confine_self

        confine_self(settings)
        _keep_capabilities(())
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "no_new_privs")
        import importlib
        import runpy

        if settings["fds"]:
            importlib.import_module(request["module"]).main(*settings["fds"])
        else:
            runpy.run_module(request["module"], run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001  the role's own failure, reported as Python would before it exits
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        _exit_as_python_would(code)


def _reopen_standard_streams() -> None:
    for name, number in (("stdout", 1), ("stderr", 2)):
        # The interpreter's own streams, for its life: nothing to close.
        setattr(sys, name, open(number, "w", buffering=1, closefd=False, errors="backslashreplace"))  # noqa: SIM115
    sys.stdin = open(0, closefd=False)  # noqa: SIM115


def _forget_the_server(request: dict[str, Any]) -> None:
    """What the interpreter kept of the server: its paths and modules of the harness (imported from
    the host's checkout, which the sandbox sees elsewhere), the temporary folder it found, its
    random state (every fork would share it)."""
    import importlib
    import inspect
    import linecache
    import random
    import tempfile

    for name in [n for n in sys.modules if n == "evaluation" or n.startswith("evaluation.")]:
        del sys.modules[name]
    for cache in (inspect._filesbymodname, inspect.modulesbyfile):  # type: ignore[attr-defined]
        cache.clear()
    linecache.clearcache()
    sys.path[:] = request["settings"]["path"] + [p for p in sys.path if p not in request["server_path"]]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    sys.pycache_prefix = request["pycache_prefix"]
    tempfile.tempdir = None
    random.seed()
    if "numpy.random" in sys.modules:  # torch imports it: its global generator too, from fresh entropy
        sys.modules["numpy.random"].seed()
    import faulthandler

    faulthandler.enable()


def _exit_as_python_would(code: int) -> None:
    try:
        import atexit

        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    finally:
        os._exit(code)


def _die_with_parent() -> None:
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _drop_bounding_set() -> None:
    """Every capability out of the bounding set: none can come back through a program it runs."""
    libc = ctypes.CDLL(None, use_errno=True)
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"dropping capability {cap} from the bounding set")


def _keep_capabilities(kept: tuple[str, ...] | list[str]) -> None:
    """The effective and permitted sets cut to `kept`, the inheritable set emptied (the exec path's
    process keeps what `confine_self` needs to become uid 65534 as root, and nothing after)."""
    libc = ctypes.CDLL(None, use_errno=True)
    bits = [0, 0]
    for cap in (_CAPABILITIES[name] for name in kept):
        bits[cap // 32] |= 1 << (cap % 32)
    header = ctypes.create_string_buffer(struct.pack("Ii", _CAPABILITY_VERSION_3, 0))
    data = ctypes.create_string_buffer(struct.pack("IIIIII", bits[0], bits[0], 0, bits[1], bits[1], 0))
    if libc.syscall(_capset_number(), header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


_CAPABILITIES = {"CAP_CHOWN": 0, "CAP_SETGID": 6, "CAP_SETUID": 7}


def _capset_number() -> int:
    import platform

    return {"x86_64": 126, "aarch64": 91}[platform.machine()]


# -- the harness's side ----------------------------------------------------------------------------


class Server:
    """One server per harness process, started on first use; `fork` puts a process into a holder."""

    def __init__(self, env: dict[str, str], pycache_prefix: str | None, server_path: list[str]):
        """`env` is the sandboxed processes' own, so what torch reads of it at import is what an
        exec'd process would read."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # torch before any module of the harness: caches filled at its import (inspect's module
        # files, say) never name the host's copy of the harness, which the sandbox sees elsewhere.
        boot = (
            "import torch, sys; sys.path[:0] = [sys.argv[1]]; "
            "from evaluation.harness.fork_server import serve; serve(int(sys.argv[2]))"
        )
        prefix = ["-X", f"pycache_prefix={pycache_prefix}"] if pycache_prefix else []
        self.server_path = server_path
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-X", "faulthandler", *prefix, "-c", boot, server_path[0], str(theirs.fileno())],
            env=env,
            stdin=subprocess.DEVNULL,
            pass_fds=(theirs.fileno(),),
            cwd="/",
            start_new_session=True,
        )
        theirs.close()
        self._socket = ours
        self._lock = threading.Lock()
        ours.settimeout(120)
        try:
            ready = ours.recv(16)
        except OSError as exc:
            raise ForkRefused(f"the fork server did not start: {exc}") from None
        if ready != b"ready":
            raise ForkRefused("the fork server did not start")
        ours.settimeout(None)

    def alive(self) -> bool:
        return self._process.poll() is None

    def fork(self, request: dict[str, Any], fds: dict[str, int]) -> None:
        names = list(fds)
        request = {**request, "fds": names, "server_path": self.server_path}
        with self._lock:
            socket.send_fds(self._socket, [json.dumps(request).encode()], [fds[name] for name in names])

    def stop(self) -> None:
        self._socket.close()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


class ForkedProcess:
    """The forked process as the harness sees it, shaped like the part of Popen it uses: its host PID,
    and its exit status (Popen's convention: minus the signal that killed it), from its keeper."""

    def __init__(self, status_fd: int, timeout: float):
        self._status = status_fd
        self._buffer = b""
        self._closed = False
        self.returncode: int | None = None
        line = self._line(timeout)
        if line is None or not line.startswith("pid "):
            os.close(self._status)
            raise ForkRefused(f"the fork server's keeper said {line!r}")
        self.pid = int(line.split()[1])

    def _line(self, timeout: float | None) -> str | None:
        """The keeper's next line; None when it has not written one in time, or closed its end."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer and not self._closed:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self._status], [], [], left)[0]:
                return None
            chunk = os.read(self._status, 4096)
            self._closed = not chunk
            self._buffer += chunk
        if b"\n" not in self._buffer:
            return None
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def poll(self) -> int | None:
        return self._settle(0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._settle(timeout)
        if code is None:
            raise subprocess.TimeoutExpired("forked process", timeout or 0)
        return code

    def _settle(self, timeout: float | None) -> int | None:
        if self.returncode is None:
            line = self._line(timeout)
            if line is not None and line.startswith("exit "):
                self.returncode = int(line.split()[1])
            elif self._closed:
                self.returncode = -signal.SIGKILL  # its keeper ended without a word: killed with it
            if self.returncode is not None:
                os.close(self._status)
        return self.returncode


def find_holder(members: list[int]) -> int | None:
    """The holder among a bubblewrap sandbox's members (`HOLDER`): the one program not bubblewrap's
    (its shell, or the sleep the shell became: the same namespaces and root)."""
    found = []
    for pid in members:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() != "bwrap":
                found.append(pid)
        except OSError:
            continue
    return found[0] if len(found) == 1 else None
