"""The OS sandbox: every process that runs user code (a problem, a candidate, a hack report's proof
inputs, the builtin optimizer's analysis of a paste) runs confined by bubblewrap.

What a confined process gets (`bwrap_command`), whether the harness runs as root or not:
    new user, PID, network (loopback only), IPC, UTS and cgroup namespaces; user 65534 inside and,
    where the harness runs as root, on the host too (`sandbox_userns`), no capabilities, no new
    privileges, no further user namespaces; a new session;
    a filesystem of read-only binds of only what it needs (/usr, the Python environment, the
    harness's sandboxed modules and its call site, CUDA's toolkit and device nodes on a GPU host),
    a private tmpfs of bounded size as its home and working folder, and the read-write folders the
    harness names (a candidate's own build cache, keyed by its source);
    no environment but what the harness sets;
    resource limits set before any user code (open files, processes, file size, address space on
    the CPU, no core dumps), a resident-memory watchdog on its whole process tree, and wall-time
    limits per request;
    killed with its whole tree at the end, and when the harness's process dies (--die-with-parent).

Where bubblewrap is missing or refused, `confinement()` says so; the harness then refuses to run
user code unless the caller allows the fallback (embedded mode only), which keeps a scrubbed
environment, its own session and, where the host permits, new network and PID namespaces, and is
reported as not confined (the run page warns).

sandbox_command.py builds the command, sandbox_host.py finds what the host offers, fork_server.py
forks a process with torch imported into a sandbox bubblewrap built (the default; exec is the
fallback), sandbox_child.py holds the child's own first step (`confine_self`), and this module runs
the confined process (`SandboxedProcess`).
"""

import json
import os
import select
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from evaluation.harness import build_caches, fork_server
from evaluation.harness.channel import Channel, ChannelClosed, ChannelGarbage, ChannelTimeout
from evaluation.harness.fork_server import ForkedProcess, ForkRefused
from evaluation.harness.sandbox_child import confine_self
from evaluation.harness.sandbox_command import (
    HOME,
    INSIDE,
    INSIDE_BYTECODE,
    ROOT_SETUP_CAPABILITIES,
    Confinement,
    Launch,
    NotConfined,
    View,
    bwrap_command,
    confinement,
    launch,
)
from evaluation.harness.sandbox_host import HARNESS_ROOT, SANDBOX_UID, bytecode_cache, sandbox_owner

# What other modules read from here besides the running process (the pipeline, the worker, the
# builtin optimizer's analysis, the tests).
__all__ = [
    "HOME",
    "INSIDE",
    "INSIDE_BYTECODE",
    "Confinement",
    "NotConfined",
    "ProcessFault",
    "SandboxedProcess",
    "View",
    "bwrap_command",
    "bytecode_cache",
    "confine_self",
    "confinement",
    "cpu_ns",
    "describe_exit",
    "launch",
    "sandbox_owner",
]

DISK_WATCH_S = 1.0


class ProcessFault(Exception):
    """The child stopped answering as it should: kind is timeout, crashed, memory or protocol."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


# -- the parent's half -----------------------------------------------------------------------------


def _descendants(pid: int) -> list[int]:
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{current}/task/{task}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                found.append(child)
                stack.append(child)
    return found


def _resident_bytes(members: list[int]) -> int:
    total = 0
    for member in members:
        try:
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def cpu_ns(members: list[int]) -> int:
    """CPU time the processes have run, in nanoseconds (every live thread of each)."""
    total = 0
    for member in members:
        try:
            tasks = os.listdir(f"/proc/{member}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                total += int(Path(f"/proc/{member}/task/{task}/schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return total


# -- the fork server --------------------------------------------------------------------------------

_servers: dict[tuple[int, str, str], fork_server.Server] = {}
_servers_lock = threading.Lock()
# Why this harness process starts its sandboxed processes by exec, once a fork was refused.
_fork_refused: list[str] = []
FORK_START_S = 60.0


def forks() -> bool:
    """Whether sandboxed processes are forked from the fork server (KERNEL_COURT_FORK_SERVER=0: never)."""
    return os.environ.get("KERNEL_COURT_FORK_SERVER", "1") != "0" and not _fork_refused


def _server_for(started: Launch, view: View) -> fork_server.Server:
    """This harness process's server, started on first use in the sandbox's base environment (the
    roles' own variables are ones torch does not read at import: the parity test holds it to that); a
    forked harness (a worker's child) starts its own. It imports torch alone (DEVELOPERS.md says why
    not torch._dynamo too)."""
    key = (os.getpid(), json.dumps(sorted(started.base_env.items())), str(view.bytecode))
    with _servers_lock:
        server = _servers.get(key)
        if server is None or not server.alive():
            bytecode = str(view.bytecode) if view.bytecode else None
            server = fork_server.Server(started.base_env, bytecode, [str(HARNESS_ROOT)])
            _servers[key] = server
        return server


def _forked(
    started: Launch, view: View, holder: subprocess.Popen[bytes], kept: list[int], log_path: Path
) -> tuple[ForkedProcess, int]:
    """A process forked into the holder's sandbox once it is built, and the holder's host PID;
    ForkRefused where that failed."""
    assert holder.stdout is not None  # piped: the holder says when its sandbox is built
    ready = select.select([holder.stdout], [], [], FORK_START_S)[0] and holder.stdout.readline() == b"ready\n"
    holder.stdout.close()
    inside = fork_server.find_holder(_descendants(holder.pid)) if ready else None
    if inside is None:
        raise ForkRefused("the holder's sandbox did not start")
    opened: dict[str, int] = {}
    try:
        for name, _ in fork_server.NAMESPACES:
            try:
                opened[name] = os.open(f"/proc/{inside}/ns/{name}", os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
        opened["root"] = os.open(f"/proc/{inside}/root", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        opened["log"] = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        status, opened["status"] = os.pipe()
        request = {
            "settings": started.settings,
            "env": started.env,
            "umask": started.umask,
            "cwd": HOME,
            "module": started.module,
            "keep_capabilities": ROOT_SETUP_CAPABILITIES if "become" in started.settings else (),
            "cgroup_procs": [str(folder / "cgroup.procs") for folder in started.group.folders] if started.group else [],
            "pycache_prefix": INSIDE_BYTECODE if view.bytecode else None,
        }
        _server_for(started, view).fork(request, {**opened, **{str(fd): fd for fd in kept}})
    except OSError as exc:
        raise ForkRefused(f"the fork server could not be asked: {exc}") from None
    finally:
        for fd in opened.values():
            os.close(fd)
    return ForkedProcess(status, FORK_START_S), inside


def _start(
    started: Launch, command: list[str], log_path: Path, stdout: int | None, pass_fds: tuple[int, ...] | list[int]
) -> subprocess.Popen[bytes]:
    """One of the sandbox's commands (the process, or its holder) in its own session; its output to
    the log unless `stdout` says otherwise."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            command,
            cwd=started.cwd,
            env=started.env,
            stdin=subprocess.DEVNULL,
            stdout=log if stdout is None else stdout,
            stderr=log,
            pass_fds=pass_fds,
            umask=started.umask,
            start_new_session=True,
        )


class SandboxedProcess:
    """One confined child speaking the channel protocol; `request()` is the only way in.

    `view` says what it sees inside the sandbox; `pass_fds` are pipe ends it keeps (their numbers
    reach its `main` after the channel's two, -1 for one it does not get). Without bubblewrap it runs only when
    `allow_unconfined`, and `report()` says it was not confined."""

    def __init__(
        self,
        *,
        role: str,
        disk_watch: tuple[Path, int] | None = None,
        view: View,
        log_path: Path,
        memory_bytes: int,
        callsite_dir: Path | None = None,
        extra_env: dict[str, str] | None = None,
        pass_fds: tuple[int, ...] = (),
        allow_unconfined: bool = False,
        processes: int = 4096,
        open_files: int = 4096,
        file_size_bytes: int = 8 * 2**30,
    ):
        self.role = role
        self.view = view
        self.log_path = log_path
        self.memory_bytes = memory_bytes
        self.device = view.device
        self.peak_resident_bytes = 0
        # A writable folder it may fill only so far (its build cache), checked about once a second.
        self.disk_watch = disk_watch
        self._disk_checked = 0.0
        self.confinement = confinement()
        # The private channel: one socket pair, whose ends (unlike a pipe's) no process can reopen
        # through /proc/self/fd to read the other side's messages.
        ours, theirs = (end.detach() for end in socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM))
        try:
            started = launch(
                view,
                module=f"evaluation.harness.sandboxed.{role}",
                memory_bytes=memory_bytes,
                fds=[theirs, theirs, *pass_fds],
                callsite_dir=callsite_dir,
                extra_env=extra_env,
                allow_unconfined=allow_unconfined,
                processes=processes,
                open_files=open_files,
                file_size_bytes=file_size_bytes,
            )
        except NotConfined:
            for fd in (ours, theirs):
                os.close(fd)
            raise
        self.network = started.network
        self.environment = started.env
        self._launch = started
        self.group = started.group
        kept = [theirs, *(fd for fd in pass_fds if fd >= 0)]
        # The sandbox's holder where the process is forked into it (`fork_server`), else the process.
        self._holder: subprocess.Popen[bytes] | None = None
        self._holder_inside: int | None = None
        self._process: subprocess.Popen[bytes] | ForkedProcess
        self.forked = False
        if started.holder_command is not None and forks():
            try:
                self._holder = _start(started, started.holder_command, log_path, subprocess.PIPE, started.pass_fds)
                self._process, self._holder_inside = _forked(started, view, self._holder, kept, log_path)
                self.forked = True
            except ForkRefused as exc:
                # Not the candidate's doing (nothing of it has run): this harness execs from now on.
                _fork_refused.append(str(exc))
                self._kill_tree(self._holder.pid if self._holder else None)
                self._holder = None
        if not self.forked:
            self._process = _start(started, started.command, log_path, None, (*kept, *started.pass_fds))
        os.close(theirs)
        self.channel = Channel(ours, ours)
        self.address_space_limited = started.address_space_limited
        self.limits = started.limits

    @property
    def pid(self) -> int:
        return self._process.pid

    def alive_members(self) -> list[int]:
        """Host PIDs of the sandbox's processes still running (bwrap, its init, the child and
        descendants; forked, the holder's too)."""
        found = _descendants(self._process.pid)
        if self._process.poll() is None:
            found.insert(0, self._process.pid)
        if self._holder is not None:
            found += ([self._holder.pid] if self._holder.poll() is None else []) + _descendants(self._holder.pid)
        return found

    def cpu_ns(self) -> int:
        """CPU time the sandbox has run: its control group's count where there is one (threads that
        exited included), else the sum over its live threads."""
        counted = self.group.cpu_ns() if self.group is not None else None
        return counted if counted is not None else cpu_ns(self.alive_members())

    @property
    def cpu_counted_by(self) -> str:
        return "control group" if self.group is not None and self.group.cpu is not None else "live threads"

    def freeze(self) -> bool:
        """Every thread of the sandbox stopped (its control group's freezer); False where there is none."""
        return self.group is not None and self.group.freeze()

    def thaw(self) -> None:
        if self.group is not None:
            self.group.thaw()

    @property
    def can_freeze(self) -> bool:
        return self.group is not None and self.group.freezer is not None

    def tasks(self) -> dict[int, tuple[str, int]]:
        """Every thread of the sandbox's processes but bubblewrap's own, read from /proc outside the
        sandbox (a thread with no Python frame included): thread id -> (name, CPU ns it has run)."""
        found = {}
        for member in self.alive_members():
            try:
                # bubblewrap's own, and the holder itself (not what it was reparented: a daemon of the
                # candidate's that left its tree ends up under bubblewrap's init, in the holder's tree).
                if member == self._holder_inside or Path(f"/proc/{member}/comm").read_text().strip() == "bwrap":
                    continue
                threads = os.listdir(f"/proc/{member}/task")
            except OSError:
                continue
            for thread in threads:
                try:
                    name = Path(f"/proc/{member}/task/{thread}/comm").read_text().strip()
                    ran = int(Path(f"/proc/{member}/task/{thread}/schedstat").read_text().split()[0])
                except (OSError, ValueError, IndexError):
                    continue
                found[int(thread)] = (name, ran)
        return found

    def _watch(self) -> None:
        if self.disk_watch is not None and time.monotonic() - self._disk_checked > DISK_WATCH_S:
            self._disk_checked = time.monotonic()
            folder, limit = self.disk_watch
            used = build_caches.size_of(folder)
            if used > limit:
                self.kill()
                raise ProcessFault(
                    "disk",
                    f"its build cache reached {used / 2**30:.1f} GiB, over the {limit / 2**30:.1f} GiB a build may "
                    "keep, and it was killed",
                )
        # Every member, not only the process's tree: forked, a daemon it double-forked is reparented
        # to bubblewrap's init, in the holder's tree.
        resident = _resident_bytes(self.alive_members())
        charged = self.group.memory_in_use() if self.group is not None else None
        resident = max(resident, charged or 0)
        self.peak_resident_bytes = max(self.peak_resident_bytes, resident)
        if resident > self.memory_bytes:
            self.kill()
            raise ProcessFault(
                "memory",
                f"its memory (resident, or charged to its control group: files in memory and "
                f"shared memory count) reached {resident / 2**30:.1f} GiB, over the "
                f"{self.memory_bytes / 2**30:.1f} GiB limit, and it was killed",
            )

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and return the one reply, or raise ProcessFault."""
        self.send(message)
        return self.receive(timeout)

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.channel.send(message)
        except (BrokenPipeError, OSError):
            raise self._ended("before it took a request") from None

    def receive(self, timeout: float) -> dict[str, Any]:
        try:
            return self.channel.receive(timeout, poll=self._watch)
        except ChannelTimeout:
            self.kill()
            raise ProcessFault("timeout", f"it did not answer within {timeout:.0f} s and was killed") from None
        except ChannelClosed:
            raise self._ended("while the harness waited for it") from None
        except ChannelGarbage as exc:
            self.kill()
            raise ProcessFault("protocol", f"it wrote to the harness's private channel: {exc}") from None

    def _ended(self, when: str) -> ProcessFault:
        try:
            code = self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self._process.wait()
        if self.group is not None and self.group.ran_out_of_memory():
            return ProcessFault(
                "memory",
                f"the kernel killed it at its memory limit ({self.group.memory_bytes / 2**30:.1f} "
                "GiB, counting files in memory and shared memory)",
            )
        return ProcessFault("crashed", f"the process ended {when} ({describe_exit(code)})")

    def kill(self) -> None:
        self.thaw()  # a task frozen by cgroup v1's freezer takes no signal, SIGKILL included, until thawed
        self._kill_tree(self._process.pid)
        if self._holder is not None:
            # Its sandbox's PID namespace ends with it, and whatever of the forked process was left.
            self._kill_tree(self._holder.pid)
            try:
                self._holder.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    @staticmethod
    def _kill_tree(pid: int | None) -> None:
        if pid is None:
            return
        for member in reversed([pid, *_descendants(pid)]):
            try:
                os.kill(member, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass

    def close(self, grace_s: float = 5.0) -> None:
        try:
            self._process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        self.kill()
        self.channel.close()
        self._launch.cleanup()

    def _user_outside(self) -> str:
        if self._launch.pass_fds:
            return f"uid {SANDBOX_UID} on the host (its own /proc/self/mem refused)"
        if os.geteuid() == 0:
            return (
                "the host's root outside it (its own /proc/self/mem readable: this host refused the harness a "
                "user namespace of its own)"
            )
        return f"the harness's own uid {os.geteuid()} on the host"

    def log_tail(self, limit: int = 4000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode(errors="replace")

    def report(self) -> dict[str, Any]:
        confined = self.confinement.confined
        return {
            "confined": confined,
            "tool": self.confinement.tool,
            "detail": self.confinement.detail,
            "process": f"a separate {self.role.replace('_', ' ')} in its own session"
            + (", forked from the harness's fork server (torch imported once) into its sandbox" if self.forked else ""),
            "user": (
                f"uid {SANDBOX_UID} in its own user namespace and {self._user_outside()}, no capabilities"
                if confined
                else "the worker's own user"
            ),
            "namespaces": ["user", "pid", "network", "ipc", "uts", "cgroup", "mount"] if confined else [],
            "filesystem": (
                "read-only binds of /usr, the Python environment and the harness; a private tmpfs home "
                f"of {self.view.home_bytes / 2**30:.1f} GiB; its own build cache"
            )
            if confined
            else "the worker's filesystem, with the worker's permissions",
            "network": self.network,
            "memory_limit_bytes": self.memory_bytes,
            "memory_enforced_by": ["resident-memory watchdog"]
            + (["RLIMIT_AS"] if self.address_space_limited else [])
            + (
                [f"cgroup v{self.group.version} (memory, counting tmpfs and memfd pages; processes)"]
                if self.group is not None and self.group.limits
                else []
            ),
            "limits": self.limits,
            "environment": sorted(self.environment),
            "memory_readable_by_others": False,
            "killed_with_the_harness": confined,
        }


def describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    if code > 128 and code - 128 in signal.Signals._value2member_map_:
        return f"killed by {signal.Signals(code - 128).name}"
    return f"exit code {code}"
