"""What this host offers the OS sandbox (sandbox.py), found out once per process: where the harness
runs as root, a user namespace of its own for the sandboxes (`sandbox_userns`); the Python
environment's folders and their compiled bytecode; the compilers' and CUDA's folders and device nodes;
and, for the unconfined fallback, what `unshare` gives.
"""

import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import threading
from pathlib import Path

HARNESS_ROOT = Path(__file__).resolve().parent.parent.parent
HARNESS_PACKAGE = Path(__file__).resolve().parent
SANDBOX_UID = 65534
_CLONE_NEWUSER = 0x10000000


def python_paths() -> list[str]:
    """The folders the Python environment lives in: the interpreter, its standard library, and every
    site-packages folder on the path (the venv's, the system's). Never the repository itself."""
    candidates = {sys.base_prefix, sys.prefix, sys.exec_prefix, *site.getsitepackages()}
    user_site = site.getusersitepackages()
    if isinstance(user_site, str):
        candidates.add(user_site)
    candidates |= {p for p in sys.path if p and ("site-packages" in p or "dist-packages" in p)}
    found: list[str] = []
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


def system_binds() -> list[str]:
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


def cuda_binds() -> tuple[list[str], list[str]]:
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


# The user namespace root's sandboxes are set up in (`sandbox_userns`), made once per process.
_userns: dict[str, int | None] = {}
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
        assert holder.stdin is not None and holder.stdout is not None  # both piped
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


def unshare_prefix() -> tuple[list[str], str]:
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
