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
"""

import ctypes
import fcntl
import hashlib
import importlib.util
import json
import os
import resource
import shutil
import signal
import site
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.harness import build_caches, cgroups
from evaluation.harness.channel import Channel, ChannelClosed, ChannelGarbage, ChannelTimeout

HARNESS_ROOT = Path(__file__).resolve().parent.parent.parent
HARNESS_PACKAGE = Path(__file__).resolve().parent
SANDBOX_UID = 65534
# Where the harness's modules, its call site and the process's home appear inside a sandbox.
INSIDE = "/opt/kernel-court"
INSIDE_LIB = INSIDE + "/lib"
INSIDE_BYTECODE = INSIDE + "/bytecode"
HOME = "/work"

# Passed through as they are: what CUDA, compilers and the host's multicast policy need. Nothing
# else of the parent's environment (database and broker URLs, secrets, tokens) reaches a child.
PASSED_THROUGH = (
    "LANG",
    "LC_ALL",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "TORCH_CUDA_ARCH_LIST",
    "CC",
    "CXX",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
    "OMP_NUM_THREADS",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "PATH",
)

BOOT = (
    "import sys, json; settings = json.loads(sys.argv[2]); sys.path[:0] = settings['path']; "
    "sys.stdout.reconfigure(line_buffering=True); sys.stderr.reconfigure(line_buffering=True); "
    "from evaluation.harness.sandbox import confine_self; confine_self(settings); "
    "import importlib, runpy; "
    "importlib.import_module(sys.argv[1]).main(*settings['fds']) if settings['fds'] else "
    "runpy.run_module(sys.argv[1], run_name='__main__')"
)

_PR_SET_DUMPABLE = 4
DISK_WATCH_S = 1.0
_CLONE_NEWUSER = 0x10000000


class ProcessFault(Exception):
    """The child stopped answering as it should: kind is timeout, crashed, memory or protocol."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


class NotConfined(RuntimeError):
    """The OS sandbox is not available here and the caller did not allow running without it."""


# -- what this host offers -------------------------------------------------------------------------


@dataclass(frozen=True)
class Confinement:
    confined: bool
    tool: str  # "bubblewrap 0.8.0", or "" when not confined
    detail: str  # what is in force, or why the sandbox is missing


_confinement: Confinement | None = None


def confinement() -> Confinement:
    """Whether bubblewrap works on this host, found by starting a confined `true` once."""
    global _confinement
    if _confinement is None:
        _confinement = _probe()
    return _confinement


def _probe() -> Confinement:
    tool = shutil.which("bwrap")
    if tool is None:
        return Confinement(False, "", "bubblewrap (bwrap) is not installed: install the bubblewrap package")
    try:
        version = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=20).stdout.strip()
        userns = sandbox_userns()
        command = bwrap_command(View(device="cpu", home_bytes=16 * 2**20), tool=tool, userns=userns)
        done = subprocess.run(
            [*command, "/bin/true"],
            capture_output=True,
            text=True,
            timeout=60,
            pass_fds=(userns,) if userns is not None else (),
            umask=0o022,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Confinement(False, "", f"bubblewrap could not start: {exc}")
    if done.returncode != 0:
        return Confinement(False, "", f"bubblewrap refused to start a sandbox here: {done.stderr.strip()[-500:]}")
    user = f"uid {SANDBOX_UID} inside and on the host" if userns is not None else f"uid {SANDBOX_UID}"
    return Confinement(
        True,
        version or "bubblewrap",
        f"bubblewrap: new user, PID, network, IPC, UTS and cgroup namespaces, {user}, no capabilities",
    )


# -- the view one confined process gets ------------------------------------------------------------


@dataclass
class View:
    """What one sandboxed process may see and write, by host path -> path inside."""

    device: str
    readable: list[tuple[str, str]] = field(default_factory=list)
    writable: list[tuple[str, str]] = field(default_factory=list)
    # Size of the private tmpfs that is its home, working folder and TMPDIR.
    home_bytes: int = 2 * 2**30
    # The harness's compiled bytecode for the environment's packages (`bytecode_cache`), read-only.
    bytecode: Path | None = None
    # A CUDA view's GPU device nodes; a build ahead (pipeline.build(ahead=True)) gets the toolkit
    # without them, so no candidate code it runs can reach a GPU another verification is timing on.
    device_nodes: bool = True

    def path(self, source) -> str:
        """Where a host path bound into this view appears to the process (unconfined: where it is)."""
        source = str(source)
        if confinement().confined:
            for host, target in self.readable + self.writable:
                if source == host or source.startswith(host + "/"):
                    return target + source[len(host) :]
        return source


def python_paths() -> list[str]:
    """The folders the Python environment lives in: the interpreter, its standard library, and every
    site-packages folder on the path (the venv's, the system's). Never the repository itself."""
    candidates = {sys.base_prefix, sys.prefix, sys.exec_prefix, *site.getsitepackages()}
    user_site = site.getusersitepackages()
    if isinstance(user_site, str):
        candidates.add(user_site)
    candidates |= {p for p in sys.path if p and ("site-packages" in p or "dist-packages" in p)}
    found = []
    for path in sorted(candidates):
        real = os.path.realpath(path)
        if not os.path.isdir(real) or real == "/usr" or real.startswith("/usr/"):
            continue
        if real == str(HARNESS_ROOT) or real.startswith(str(HARNESS_ROOT) + "/") and ".venv" not in real:
            continue
        for existing in list(found):
            if real.startswith(existing + "/"):
                break
        else:
            found = [p for p in found if not p.startswith(real + "/")] + [real]
    return found


def _ships_bytecode() -> bool:
    spec = importlib.util.find_spec("torch")
    return not (spec and spec.origin) or os.path.exists(importlib.util.cache_from_source(spec.origin))


def _bytecode_sources() -> list[str]:
    return python_paths()


def bytecode_cache() -> Path | None:
    """Compiled bytecode for the environment's packages where they ship none (installed with
    --no-compile, say): without it every sandboxed process compiles torch's modules from source, which
    took seconds of each start on a GPU host. The harness compiles them here once, outside every
    sandbox, from the installed sources; sandboxed processes read it through `-X pycache_prefix` from a
    read-only bind, so no bytecode a sandboxed process could write is ever imported. None where the
    packages have their own bytecode (then nothing changes)."""
    if _ships_bytecode():
        return None
    paths = _bytecode_sources()
    # A new install changes a site-packages folder's entries, hence its mtime: a new cache.
    key = hashlib.sha256(
        json.dumps([sys.implementation.cache_tag] + [(p, os.stat(p).st_mtime_ns) for p in paths]).encode()
    ).hexdigest()[:24]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernel-court" / "bytecode" / key
    done = cache / ".complete"
    if done.exists():
        return cache
    cache.mkdir(parents=True, exist_ok=True)
    for folder in (cache.parent.parent, cache.parent, cache):
        os.chmod(folder, 0o755)
    with open(cache.parent / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # several workers starting at once compile it once
        if not done.exists():
            subprocess.run(
                [sys.executable, "-X", f"pycache_prefix={cache}", "-m", "compileall", "-q", "-j", "0", *paths],
                capture_output=True,
                timeout=1800,
                check=False,
            )
            done.write_text(json.dumps(paths))
    return cache


def _system_binds() -> list[str]:
    """Read-only parts of the host every sandboxed process needs: the dynamic loader's cache, and the
    installation folders of the compilers the environment names (CC=/opt/gcc/bin/gcc on a GPU host:
    Inductor and load_inline build with it) where they live outside /usr."""
    binds = []
    for name in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/nsswitch.conf"):
        if os.path.exists(name):
            binds.append(name)
    for variable in ("CC", "CXX"):
        tool = shutil.which(os.environ.get(variable, "")) if os.environ.get(variable) else None
        if tool:
            prefix = os.path.dirname(os.path.dirname(os.path.realpath(tool)))
            if prefix not in ("/", "/usr") and not prefix.startswith("/usr/") and prefix not in binds:
                binds.append(prefix)
    return binds


def _cuda_binds() -> tuple[list[str], list[str]]:
    """(read-only folders, device nodes) a CUDA process needs: the toolkit (nvcc for load_inline),
    the driver's libraries wherever LD_LIBRARY_PATH puts them, the GPUs' device nodes, and the parts of
    /sys the driver and torch read (PCI topology, CPUs and NUMA nodes)."""
    folders = []
    for home in {os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"}:
        if home and os.path.isdir(home):
            folders += [home, os.path.realpath(home)]
    # Under /usr is visible already (and a link there, /usr/local/cuda, cannot be bound over).
    folders = [f for f in folders if f != "/usr" and not f.startswith("/usr/")]
    for entry in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if entry and os.path.isdir(entry) and not entry.startswith("/usr/") and not entry.startswith(str(HARNESS_ROOT)):
            folders.append(entry)
    for name in ("/sys/devices", "/sys/bus", "/sys/class", "/sys/module/nvidia"):
        if os.path.exists(name):
            folders.append(name)
    nodes = sorted(str(p) for p in Path("/dev").glob("nvidia*"))
    nodes += [str(p) for p in Path("/dev/nvidia-caps").glob("*")] if os.path.isdir("/dev/nvidia-caps") else []
    return sorted(set(folders)), [n for n in nodes if not os.path.isdir(n)]


def _passwd_files() -> tuple[str, str]:
    """A passwd and group naming the sandbox's user, so getpass and compilers find a name for it."""
    folder = Path(tempfile.gettempdir()) / f"kernel-court-etc-{os.geteuid()}"
    folder.mkdir(mode=0o755, exist_ok=True)
    passwd, group = folder / "passwd", folder / "group"
    if not passwd.exists():
        passwd.write_text(f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:{HOME}:/bin/sh\n")
        group.write_text(f"sandbox:x:{SANDBOX_UID}:\n")
    return str(passwd), str(group)


# The user namespace root's sandboxes are set up in (`sandbox_userns`), made once per process.
_userns: dict = {}
_userns_lock = threading.Lock()

# Run in a process of its own: it enters a new user namespace, waits for the parent to write its
# maps, then (still holding every capability there, since it never execs) forbids further user
# namespaces inside it, as bubblewrap's --disable-userns does for its own.
_USERNS_HOLDER = (
    "import ctypes, os, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    f"if libc.unshare({_CLONE_NEWUSER}) != 0: sys.exit('unshare: ' + os.strerror(ctypes.get_errno()))\n"
    "print('entered', flush=True); sys.stdin.readline()\n"
    "open('/proc/sys/user/max_user_namespaces', 'w').write('0')\n"
    "print('sealed', flush=True); sys.stdin.read()\n"
)


def sandbox_userns() -> int | None:
    """Where the harness runs as root: a file descriptor of a user namespace of its own, mapping root
    and uid 65534 each to itself, in which no further user namespace can be made; None elsewhere, or
    where the host refuses.

    bubblewrap's own user namespace, made by root, maps the sandbox's uid 65534 to the host's root: a
    sandboxed process is then the owner of its own /proc files although it has no capability, and
    plain Python can open /proc/self/mem and read or write any memory of its process (the call site's
    key and records included). In this namespace bubblewrap sets the sandbox up as root (reading what
    only root may read, a Python under /root), and the process becomes uid 65534 on the host too before
    any user code runs (`confine_self`): its /proc/self/mem is root's, and refused. Without root the
    sandbox's uid is the harness's own user, which is not root either."""
    if os.geteuid() != 0:
        return None
    with _userns_lock:
        if "fd" not in _userns:
            _userns["fd"] = _make_userns()
        return _userns["fd"]


def _make_userns() -> int | None:
    holder = None
    try:
        holder = subprocess.Popen(
            [sys.executable, "-I", "-c", _USERNS_HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        if holder.stdout.readline().strip() != "entered":
            return None
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{holder.pid}/{name}", "w") as handle:
                handle.write(f"0 0 1\n{SANDBOX_UID} {SANDBOX_UID} 1\n")
        holder.stdin.write("go\n")
        holder.stdin.flush()
        if holder.stdout.readline().strip() != "sealed":
            return None
        return os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()


def sandbox_owner() -> tuple[int, int] | None:
    """The host uid and gid the sandboxed processes run as, where it is not the harness's own: what
    their writable folders must belong to."""
    return (SANDBOX_UID, SANDBOX_UID) if sandbox_userns() is not None else None


def bwrap_command(view: View, *, tool: str = "bwrap", userns: int | None = None) -> list[str]:
    """The bwrap command line confining one process to `view` (the program and its arguments follow).
    `userns` (`sandbox_userns`): set up as root in that namespace, the process then drops to uid 65534
    itself (it keeps only the capabilities to do so, and to own its private folders, until then)."""
    if userns is None:
        identity = ["--unshare-all", "--unshare-user", "--disable-userns", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
        identity += ["--cap-drop", "ALL"]
    else:
        identity = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        identity += ["--userns", str(userns), "--uid", "0", "--gid", "0", "--cap-drop", "ALL"]
        identity += [arg for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN") for arg in ("--cap-add", cap)]
    command = [
        tool,
        *identity,
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
        "--ro-bind",
        "/usr",
        "/usr",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(64 * 2**20),
        "--tmpfs",
        "/dev/shm",
        "--size",
        str(view.home_bytes),
        "--tmpfs",
        HOME,
        "--dir",
        HOME + "/tmp",
        "--size",
        str(64 * 2**20),
        "--tmpfs",
        "/tmp",
        "--chdir",
        HOME,
        "--clearenv",
    ]
    for name in ("/bin", "/lib", "/lib64", "/sbin", "/lib32"):
        if os.path.islink(name):
            command += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            command += ["--ro-bind", name, name]
    passwd, group = _passwd_files()
    command += ["--ro-bind", passwd, "/etc/passwd", "--ro-bind", group, "/etc/group"]
    for name in _system_binds():
        command += ["--ro-bind", name, name]
    for path in python_paths():
        command += ["--ro-bind", path, path]
    if view.device == "cuda":
        folders, nodes = _cuda_binds()
        for path in folders:
            command += ["--ro-bind-try", path, path]
        for node in nodes if view.device_nodes else []:
            command += ["--dev-bind-try", node, node]
    if view.bytecode:
        command += ["--ro-bind", str(view.bytecode), INSIDE_BYTECODE]
    for source, target in view.readable:
        command += ["--ro-bind", source, target]
    for source, target in view.writable:
        command += ["--bind", source, target]
    return _with_parents(command)


_BINDS = ("--ro-bind", "--bind", "--ro-bind-try", "--dev-bind-try", "--dev-bind")


def _with_parents(command: list[str]) -> list[str]:
    """`command` with the folders above each bind's target made first (mode 0755, `--dir`): bubblewrap
    makes missing ones itself, some as 0700, which only a sandbox that is root could walk. (No value
    on this command line is spelled like a bind option.)"""
    out: list[str] = []
    index = 0
    while index < len(command):
        if command[index] in _BINDS and index + 2 < len(command):
            for parent in reversed(Path(command[index + 2]).parents):
                if str(parent) != "/":
                    out += ["--dir", str(parent)]
            out += command[index : index + 3]
            index += 3
        else:
            out.append(command[index])
            index += 1
    return out


# -- the child's half ------------------------------------------------------------------------------


def confine_self(settings: dict) -> None:
    """Run first in every child, before torch or any user code: the sandbox's own user where it was
    set up as root (`sandbox_userns`), limits it cannot raise (it has no capabilities) and no readable
    memory."""
    owner = settings.get("become")
    if owner is not None:
        # Its private folders first (bubblewrap made them as root), then the user: changing uid from
        # root drops every capability, for good (no new privileges).
        for folder in settings.get("own", []):
            os.chown(folder, owner, owner)
        os.setgroups([])
        os.setresgid(owner, owner, owner)
        os.setresuid(owner, owner, owner)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for name, key in (
        ("RLIMIT_FSIZE", "file_size_bytes"),
        ("RLIMIT_NOFILE", "open_files"),
        ("RLIMIT_NPROC", "processes"),
        ("RLIMIT_AS", "address_space_bytes"),
    ):
        value = settings.get(key)
        if value:
            soft, hard = resource.getrlimit(getattr(resource, name))
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(getattr(resource, name), (value, value))
    try:
        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


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


def _resident_bytes(pid: int) -> int:
    total = 0
    for member in [pid, *_descendants(pid)]:
        try:
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def cpu_ns(pid: int) -> int:
    """CPU time the process tree has run, in nanoseconds (every thread of every member)."""
    total = 0
    for member in [pid, *_descendants(pid)]:
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


def _unshare_prefix() -> tuple[list[str], str]:
    """The fallback's namespaces: what `unshare` gives on this host, or nothing."""
    if shutil.which("unshare") is None:
        return [], "host network: unshare is not installed"
    user = [] if os.geteuid() == 0 else ["--map-root-user"]
    for prefix in (["unshare", "--net", *user, "--pid", "--fork", "--mount-proc"], ["unshare", "--net", *user]):
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=20).returncode == 0:
                return prefix, "a new network namespace with only a loopback device"
        except (OSError, subprocess.TimeoutExpired):
            continue
    return [], "host network: unshare is not permitted here"


@dataclass
class Launch:
    """How to start one confined process: its command line, environment and what is in force."""

    command: list[str]
    env: dict[str, str]
    cwd: str
    network: str
    limits: dict
    address_space_limited: bool
    fallback_home: Path | None
    # The control group it starts in (memory, counting tmpfs and memfd pages, and a cap on processes),
    # where the host allows one.
    group: cgroups.Group | None = None
    # File descriptors the command needs passed to it (the user namespace bubblewrap enters).
    pass_fds: tuple[int, ...] = ()
    # The mask to start it with: bubblewrap makes the folders above its binds with it, and a sandbox
    # that is not root must be able to walk them.
    umask: int = 0o022

    def cleanup(self) -> None:
        """After the process and its tree are gone."""
        if self.group is not None:
            self.group.remove()
        if self.fallback_home is not None:
            shutil.rmtree(self.fallback_home, ignore_errors=True)


def launch(
    view: View,
    *,
    module: str,
    memory_bytes: int,
    fds: list[int],
    callsite_dir: Path | None = None,
    extra_env: dict[str, str] | None = None,
    allow_unconfined: bool = False,
    processes: int = 4096,
    open_files: int = 4096,
    file_size_bytes: int = 8 * 2**30,
) -> Launch:
    """The command confining `module` to `view`: its `main(*fds)` runs, or (no fds) the module as __main__.
    Without bubblewrap, only when `allow_unconfined` (raises NotConfined otherwise)."""
    state = confinement()
    if not state.confined and not allow_unconfined:
        raise NotConfined(f"refusing to run user code without the OS sandbox: {state.detail}")
    fallback_home = None
    userns = sandbox_userns() if state.confined else None
    if state.confined:
        path = [INSIDE, INSIDE_LIB] if callsite_dir else [INSIDE]
        view.readable = [(str(HARNESS_PACKAGE), INSIDE + "/evaluation/harness"), *view.readable]
        if callsite_dir:
            view.readable.append((str(callsite_dir), INSIDE_LIB))
        prefix = bwrap_command(view, tool=shutil.which("bwrap"), userns=userns)
        home = HOME
        network = "none: a new network namespace with only a loopback device"
    else:
        path = [str(HARNESS_ROOT)] + ([str(callsite_dir)] if callsite_dir else [])
        prefix, network = _unshare_prefix()
        fallback_home = Path(tempfile.mkdtemp(prefix="kernel-court-unconfined-"))
        (fallback_home / "tmp").mkdir()
        home = str(fallback_home)
    settings = {
        "path": path,
        "fds": fds,
        "file_size_bytes": file_size_bytes,
        "open_files": open_files,
        "processes": processes,
        # On CUDA the driver reserves far more address space than it uses: the watchdog on
        # resident memory is the limit there.
        "address_space_bytes": memory_bytes + 8 * 2**30 if view.device == "cpu" else None,
    }
    if userns is not None:
        settings.update(become=SANDBOX_UID, own=[HOME, f"{HOME}/tmp", "/tmp", "/dev/shm"])
    env = {name: os.environ[name] for name in PASSED_THROUGH if name in os.environ}
    # The environment's own tools first (ninja, which load_inline builds with, lives beside Python).
    env["PATH"] = ":".join([os.path.dirname(sys.executable), env.get("PATH") or "/usr/local/bin:/usr/bin:/bin"])
    env.update(
        HOME=home,
        TMPDIR=f"{home}/tmp",
        USER="sandbox",
        LOGNAME="sandbox",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONHASHSEED="0",
        OMP_WAIT_POLICY="PASSIVE",
    )
    env.update(extra_env or {})
    command = [*prefix]
    if state.confined:
        for name, value in env.items():
            command += ["--setenv", name, value]
    bytecode = ["-X", f"pycache_prefix={INSIDE_BYTECODE}"] if state.confined and view.bytecode else []
    command += [sys.executable, "-I", "-X", "faulthandler", *bytecode, "-c", BOOT, module, json.dumps(settings)]
    # The group's hard limit is a backstop above the watchdog's, which kills first with a clear reason.
    group = cgroups.create(module.rsplit(".", 1)[-1], memory_bytes=int(memory_bytes * 1.25) + 2**28, processes=processes)
    if group is not None:
        command = group.enter(command)
    return Launch(
        command,
        env,
        "/" if state.confined else home,
        network,
        {k: settings[k] for k in ("file_size_bytes", "open_files", "processes")},
        settings["address_space_bytes"] is not None,
        fallback_home,
        group,
        (userns,) if userns is not None else (),
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
        with open(log_path, "ab") as log:
            self._process = subprocess.Popen(
                started.command,
                cwd=started.cwd,
                env=started.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(theirs, *(fd for fd in pass_fds if fd >= 0), *started.pass_fds),
                umask=started.umask,
                start_new_session=True,
            )
        os.close(theirs)
        self.channel = Channel(ours, ours)
        self.address_space_limited = started.address_space_limited
        self.limits = started.limits

    @property
    def pid(self) -> int:
        return self._process.pid

    def alive_members(self) -> list[int]:
        """Host PIDs of the sandbox's processes still running (bwrap, its init, the child and descendants)."""
        if self._process.poll() is not None:
            return _descendants(self._process.pid)
        return [self._process.pid, *_descendants(self._process.pid)]

    def cpu_ns(self) -> int:
        """CPU time the sandbox has run: its control group's count where there is one (threads that
        exited included), else the sum over its live threads."""
        counted = self.group.cpu_ns() if self.group is not None else None
        return counted if counted is not None else cpu_ns(self._process.pid)

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
                if Path(f"/proc/{member}/comm").read_text().strip() == "bwrap":
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
        resident = _resident_bytes(self._process.pid)
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

    def request(self, message: dict, timeout: float) -> dict:
        """Send one request and return the one reply, or raise ProcessFault."""
        self.send(message)
        return self.receive(timeout)

    def send(self, message: dict) -> None:
        try:
            self.channel.send(message)
        except (BrokenPipeError, OSError):
            raise self._ended("before it took a request") from None

    def receive(self, timeout: float) -> dict:
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
        members = [self._process.pid, *_descendants(self._process.pid)]
        for pid in reversed(members):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.killpg(self._process.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
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

    def report(self) -> dict:
        confined = self.confinement.confined
        return {
            "confined": confined,
            "tool": self.confinement.tool,
            "detail": self.confinement.detail,
            "process": f"a separate {self.role.replace('_', ' ')} in its own session",
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
