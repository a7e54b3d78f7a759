"""A control group per sandboxed process, where the host lets the harness make one.

What it gives the harness beyond the sandbox: a freezer, so that nothing of a candidate runs while
anything else is measured (`freeze`, `thaw`), and its CPU time counted by the kernel for the whole
group, threads that have exited included (`cpu_ns`), where summing the live threads loses what an
exited thread ran. And two limits the sandbox cannot otherwise hold: memory the kernel charges to the group (pages in a
tmpfs, memfd files and System V shared memory included, which no process's resident set shows: a
candidate held 7.5 GiB of the host's memory in unmapped memfd files past the resident-memory
watchdog), and a cap on processes and threads (RLIMIT_NPROC does not bind a sandbox of a harness
that runs as root, whose processes are uid 0 outside their user namespace).

cgroup v2 (a writable group of this process's with the memory and pids controllers; freezing and
CPU time are v2's own) or v1 (the memory and pids hierarchies, and the freezer and cpuacct ones where
mounted); where neither can be written (a container with a read-only
/sys/fs/cgroup), `create` returns None and the watchdog on resident memory is the only memory limit,
which the verdict's `sandbox` says. Standard library only.
"""

import secrets
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


def _own(controller: str | None) -> str | None:
    """This process's group path in a hierarchy: v2 ("0::/x") when controller is None, else v1."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        number, names, path = line.split(":", 2)
        if controller is None and number == "0" and names == "":
            return path
        if controller is not None and controller in names.split(","):
            return path
    return None


FREEZE_TIMEOUT_S = 5.0


@dataclass
class Group:
    """The group's folders, one per hierarchy (one for v2), and what it holds."""

    folders: list[Path]
    version: int
    memory_bytes: int
    # The folders holding the freezer and the CPU counter (None where the host has neither).
    freezer: Path | None = None
    cpu: Path | None = None
    # Whether it limits memory and processes: a cgroup v2 group under one that holds processes itself
    # cannot (v2 gives controllers only to groups without processes), yet still freezes and counts.
    limits: bool = True

    def freeze(self) -> bool:
        """Every task of the group stopped, waited for; False where the host gives no freezer or the
        group did not freeze in time (then it is thawed again)."""
        if self.freezer is None:
            return False
        v2 = self.version == 2
        try:
            _write(self.freezer / ("cgroup.freeze" if v2 else "freezer.state"), "1" if v2 else "FROZEN")
            deadline = time.monotonic() + FREEZE_TIMEOUT_S
            while time.monotonic() < deadline:
                if self._frozen_v2() if v2 else (self.freezer / "freezer.state").read_text().strip() == "FROZEN":
                    return True
                time.sleep(0.0002)
        except OSError:
            return False
        self.thaw()
        return False

    def _frozen_v2(self) -> bool:
        assert self.freezer is not None  # called by `freeze`, which has one
        events = dict(line.split() for line in (self.freezer / "cgroup.events").read_text().splitlines())
        return events.get("frozen") == "1"

    def thaw(self) -> None:
        if self.freezer is None:
            return
        v2 = self.version == 2
        try:
            _write(self.freezer / ("cgroup.freeze" if v2 else "freezer.state"), "0" if v2 else "THAWED")
        except OSError:
            pass

    def cpu_ns(self) -> int | None:
        """CPU time every task of the group has run since it was made, exited ones included."""
        if self.cpu is None:
            return None
        try:
            if self.version == 2:
                stat = dict(line.split() for line in (self.cpu / "cpu.stat").read_text().splitlines())
                return int(stat["usage_usec"]) * 1000
            return int((self.cpu / "cpuacct.usage").read_text())
        except (OSError, ValueError, KeyError):
            return None

    def enter(self, command: list[str]) -> list[str]:
        """`command`, started inside the group: a shell joins it, then becomes the command, so no
        process of it ever runs outside."""
        joins = " ".join(f"echo $$ > {shlex.quote(str(folder / 'cgroup.procs'))} || exit 97;" for folder in self.folders)
        return ["/bin/sh", "-c", f'{joins} exec "$@"', "sh", *command]

    def memory_in_use(self) -> int | None:
        """Anonymous and shared memory charged to the group (tmpfs and memfd pages are shared memory),
        not the page cache of the files it read (torch's libraries), which the kernel reclaims."""
        keys = ("anon", "shmem") if self.version == 2 else ("rss", "shmem")
        for folder in self.folders:
            try:
                stat = dict(line.split() for line in (folder / "memory.stat").read_text().splitlines())
            except (OSError, ValueError):
                continue
            return sum(int(stat.get(key, 0)) for key in keys)
        return None

    def ran_out_of_memory(self) -> bool:
        """Whether the kernel killed a process of the group for its memory limit."""
        for folder in self.folders:
            try:
                if self.version == 2:
                    events = dict(line.split() for line in (folder / "memory.events").read_text().splitlines())
                    return int(events.get("oom_kill", 0)) > 0
                if (folder / "memory.failcnt").exists():
                    return int((folder / "memory.failcnt").read_text()) > 0
            except (OSError, ValueError):
                continue
        return False

    def remove(self) -> None:
        """Removed once its processes are gone (killed: the caller has waited for them)."""
        for folder in self.folders:
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def create(label: str, *, memory_bytes: int, processes: int) -> Group | None:
    """A new group under this process's own, with both limits set; None where the host allows none."""
    name = f"kernel-court-{label}-{secrets.token_hex(4)}"
    return _create_v2(name, memory_bytes, processes) or _create_v1(name, memory_bytes, processes)


def _create_v2(name: str, memory_bytes: int, processes: int) -> Group | None:
    own = _own(None)
    if own is None or not (ROOT / "cgroup.controllers").exists():
        return None
    parent = ROOT / own.lstrip("/")
    limits = True
    try:
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        if not {"memory", "pids"} <= set(enabled):
            _write(parent / "cgroup.subtree_control", "+memory +pids")
    except OSError:
        # The harness's own group holds processes (a container's, a lent machine's): its children get no
        # controllers, but freezing and CPU time are v2's own.
        limits = False
    folder = parent / name
    try:
        folder.mkdir()
    except OSError:
        return None
    if limits:
        try:
            _write(folder / "memory.max", str(memory_bytes))
            if (folder / "memory.swap.max").exists():
                _write(folder / "memory.swap.max", "0")
            _write(folder / "pids.max", str(processes))
        except OSError:
            Group([folder], 2, memory_bytes).remove()
            return None
    freezer = folder if (folder / "cgroup.freeze").exists() else None
    return Group([folder], 2, memory_bytes, freezer=freezer, cpu=folder, limits=limits)


def _create_v1(name: str, memory_bytes: int, processes: int) -> Group | None:
    folders = []
    try:
        for controller in ("memory", "pids"):
            own = _own(controller)
            hierarchy = ROOT / controller
            if own is None or not hierarchy.is_dir():
                raise OSError(f"no {controller} hierarchy")
            folder = hierarchy / own.lstrip("/") / name
            folder.mkdir()
            folders.append(folder)
        memory, pids = folders
        _write(memory / "memory.limit_in_bytes", str(memory_bytes))
        if (memory / "memory.memsw.limit_in_bytes").exists():
            try:
                _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
            except OSError:
                pass
        _write(pids / "pids.max", str(processes))
    except OSError:
        Group(folders, 1, memory_bytes).remove()
        return None
    # Freezer and CPU accounting where their hierarchies are mounted; without them the group still
    # limits memory and processes.
    found = {}
    for controller, probe in (("freezer", "freezer.state"), ("cpuacct", "cpuacct.usage")):
        own = _own(controller)
        mounted = next((ROOT / name for name in (controller, "cpu,cpuacct", "cpuacct,cpu") if (ROOT / name).is_dir()), None)
        if own is None or mounted is None:
            continue
        folder = mounted / own.lstrip("/") / name
        try:
            folder.mkdir()
        except OSError:
            continue
        if (folder / probe).exists():
            folders.append(folder)
            found[controller] = folder
        else:
            Group([folder], 1, memory_bytes).remove()
    return Group(folders, 1, memory_bytes, freezer=found.get("freezer"), cpu=found.get("cpuacct"))


def available() -> bool:
    """Whether this host lets the harness make a group (tried once, then removed)."""
    group = create("probe", memory_bytes=2**30, processes=64)
    if group is None:
        return False
    group.remove()
    return True
