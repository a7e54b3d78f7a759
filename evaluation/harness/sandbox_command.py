"""Building the bubblewrap command that confines one process (`bwrap_command`, `launch`): what it may
see and write (`View`), its environment and limits, the control group it starts in; and whether
bubblewrap works on this host at all (`confinement`).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.harness import cgroups, sandbox_host
from evaluation.harness.fork_server import HOLDER
from evaluation.harness.sandbox_host import HARNESS_PACKAGE, HARNESS_ROOT, SANDBOX_UID, python_paths, sandbox_userns

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
    "from evaluation.harness.sandbox_child import confine_self; confine_self(settings); "
    "import importlib, runpy; "
    "importlib.import_module(sys.argv[1]).main(*settings['fds']) if settings['fds'] else "
    "runpy.run_module(sys.argv[1], run_name='__main__')"
)


# What a sandbox set up as root keeps until `confine_self` has owned its folders and become uid 65534.
ROOT_SETUP_CAPABILITIES = ("CAP_CHOWN", "CAP_SETGID", "CAP_SETUID")


class NotConfined(RuntimeError):
    """The OS sandbox is not available here and the caller did not allow running without it."""


# -- whether bubblewrap works here -----------------------------------------------------------------


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

    def path(self, source: str | Path) -> str:
        """Where a host path bound into this view appears to the process (unconfined: where it is)."""
        source = str(source)
        if confinement().confined:
            for host, target in self.readable + self.writable:
                if source == host or source.startswith(host + "/"):
                    return target + source[len(host) :]
        return source


def _passwd_files() -> tuple[str, str]:
    """A passwd and group naming the sandbox's user, so getpass and compilers find a name for it."""
    folder = Path(tempfile.gettempdir()) / f"kernel-court-etc-{os.geteuid()}"
    folder.mkdir(mode=0o755, exist_ok=True)
    passwd, group = folder / "passwd", folder / "group"
    if not passwd.exists():
        passwd.write_text(f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:{HOME}:/bin/sh\n")
        group.write_text(f"sandbox:x:{SANDBOX_UID}:\n")
    return str(passwd), str(group)


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
        identity += [arg for cap in ROOT_SETUP_CAPABILITIES for arg in ("--cap-add", cap)]
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
    for name in sandbox_host.system_binds():
        command += ["--ro-bind", name, name]
    for path in python_paths():
        command += ["--ro-bind", path, path]
    if view.device == "cuda":
        folders, nodes = sandbox_host.cuda_binds()
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


@dataclass
class Launch:
    """How to start one confined process: its command line, environment and what is in force."""

    command: list[str]
    env: dict[str, str]
    cwd: str
    network: str
    limits: dict[str, int]  # the process's rlimits: file_size_bytes, open_files, processes
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
    # The same sandbox holding a waiting `fork_server.HOLDER` instead of the interpreter (None
    # unconfined), and what the process forked into it runs: `module` with `settings` in `env`;
    # `base_env` is `env` without the caller's extra variables (the fork server's own).
    holder_command: list[str] | None = None
    module: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    base_env: dict[str, str] = field(default_factory=dict)

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
        tool = shutil.which("bwrap")
        assert tool is not None  # confined: the probe found it (`confinement`)
        prefix = bwrap_command(view, tool=tool, userns=userns)
        home = HOME
        network = "none: a new network namespace with only a loopback device"
    else:
        path = [str(HARNESS_ROOT)] + ([str(callsite_dir)] if callsite_dir else [])
        prefix, network = sandbox_host.unshare_prefix()
        fallback_home = Path(tempfile.mkdtemp(prefix="kernel-court-unconfined-"))
        (fallback_home / "tmp").mkdir()
        home = str(fallback_home)
    settings: dict[str, Any] = {
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
    base_env = dict(env)
    env.update(extra_env or {})
    command = [*prefix]
    if state.confined:
        for name, value in env.items():
            command += ["--setenv", name, value]
    holder = [*command, *HOLDER] if state.confined else None
    bytecode = ["-X", f"pycache_prefix={INSIDE_BYTECODE}"] if state.confined and view.bytecode else []
    command += [sys.executable, "-I", "-X", "faulthandler", *bytecode, "-c", BOOT, module, json.dumps(settings)]
    # The group's hard limit is a backstop above the watchdog's, which kills first with a clear reason.
    group = cgroups.create(module.rsplit(".", 1)[-1], memory_bytes=int(memory_bytes * 1.25) + 2**28, processes=processes)
    if group is not None:
        command = group.enter(command)
        holder = group.enter(holder) if holder is not None else None
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
        holder_command=holder,
        module=module,
        settings=settings,
        base_env=base_env,
    )
