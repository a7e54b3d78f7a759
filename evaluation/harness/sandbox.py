"""The sandbox: every problem and candidate runs in its own confined child process.

Parent half (`SandboxedProcess`): starts the child with a scrubbed environment, a private
temporary home and working directory, in new network, PID and mount namespaces where the host
permits (`unshare`), in its own session so the whole tree can be killed; a watchdog kills it on
wall-time or resident-memory overrun. What was in force is reported, never assumed.

Child half (`confine_self`): the first thing a child runs, before torch or any user code loads:
resource limits (address space on CPU, file size, no core dumps) and `PR_SET_DUMPABLE=0`, so no
other process of the same user can read its memory through /proc or ptrace.
"""

import ctypes
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.harness.channel import Channel, ChannelClosed, ChannelGarbage, ChannelTimeout

HARNESS_ROOT = Path(__file__).resolve().parent.parent.parent

# Passed through as they are: what CUDA, compilers and the host's multicast policy need. Nothing
# else of the parent's environment (database and broker URLs, secrets, tokens) reaches a child.
PASSED_THROUGH = (
    "PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "TORCH_CUDA_ARCH_LIST", "CC", "CXX",
    "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS", "OMP_NUM_THREADS",
)

BOOT = (
    "import sys, json; sys.path.insert(0, sys.argv[1]); "
    "sys.stdout.reconfigure(line_buffering=True); sys.stderr.reconfigure(line_buffering=True); "
    "from evaluation.harness.sandbox import confine_self; confine_self(json.loads(sys.argv[4])); "
    "import importlib; importlib.import_module(sys.argv[2]).main(*map(int, sys.argv[3].split(',')))"
)

_PR_SET_DUMPABLE = 4


class ProcessFault(Exception):
    """The child stopped answering as it should: kind is timeout, crashed, memory or protocol."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


@dataclass
class Isolation:
    """What `unshare` gives on this host, found by trying it once per process."""

    prefix: list[str] = field(default_factory=list)
    network: str = "host network: unshare is not permitted here"
    pid_namespace: bool = False


_isolation: Isolation | None = None


def isolation() -> Isolation:
    global _isolation
    if _isolation is None:
        _isolation = _probe_isolation()
    return _isolation


def _probe_isolation() -> Isolation:
    if shutil.which("unshare") is None:
        return Isolation(network="host network: unshare is not installed")
    user = [] if os.geteuid() == 0 else ["--map-root-user"]
    attempts = (
        (["unshare", "--net", *user, "--pid", "--fork", "--mount-proc"], True),
        (["unshare", "--net", *user], False),
    )
    for prefix, pid_namespace in attempts:
        try:
            done = subprocess.run([*prefix, "true"], capture_output=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return Isolation(prefix, "none: a new network namespace with only a loopback device", pid_namespace)
    return Isolation()


def scrubbed_environment(home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {name: os.environ[name] for name in PASSED_THROUGH if name in os.environ}
    tmp = home / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0")
    env.update(extra)
    return env


def confine_self(settings: dict) -> None:
    """Run first in every child: limits it cannot raise (unless root) and no readable memory."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    size = settings.get("file_size_bytes")
    if size:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    address_space = settings.get("address_space_bytes")
    if address_space:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    try:
        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


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


class SandboxedProcess:
    """One confined child speaking the channel protocol; `request()` is the only way in."""

    def __init__(self, *, role: str, home: Path, log_path: Path, memory_bytes: int, device: str,
                 extra_env: dict[str, str]):
        self.role = role
        self.home = home
        self.log_path = log_path
        self.memory_bytes = memory_bytes
        self.device = device
        self.isolation = isolation()
        self.peak_resident_bytes = 0
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        settings = {
            "file_size_bytes": 16 * 2**30,
            # On CUDA the driver reserves far more address space than it uses: the watchdog on
            # resident memory is the limit there.
            "address_space_bytes": memory_bytes + 8 * 2**30 if device == "cpu" else None,
        }
        command = [
            *self.isolation.prefix, sys.executable, "-I", "-X", "faulthandler", "-c", BOOT,
            str(HARNESS_ROOT), f"evaluation.harness.{role}", f"{to_child_r},{from_child_w}", json.dumps(settings),
        ]
        home.mkdir(parents=True, exist_ok=True)
        self.environment = scrubbed_environment(home, extra_env)
        with open(log_path, "ab") as log:
            self._process = subprocess.Popen(
                command, cwd=home, env=self.environment, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                pass_fds=(to_child_r, from_child_w), start_new_session=True,
            )
        os.close(to_child_r)
        os.close(from_child_w)
        self.channel = Channel(from_child_r, to_child_w)
        self.address_space_limited = settings["address_space_bytes"] is not None

    @property
    def pid(self) -> int:
        return self._process.pid

    def _watch(self) -> None:
        resident = _resident_bytes(self._process.pid)
        self.peak_resident_bytes = max(self.peak_resident_bytes, resident)
        if resident > self.memory_bytes:
            self.kill()
            raise ProcessFault("memory", f"its resident memory reached {resident / 2**30:.1f} GiB, over the "
                               f"{self.memory_bytes / 2**30:.1f} GiB limit, and it was killed")

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
        return ProcessFault("crashed", f"the process ended {when} ({describe_exit(code)})")

    def kill(self) -> None:
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

    def log_tail(self, limit: int = 4000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode(errors="replace")

    def report(self) -> dict:
        return {
            "process": f"a separate {self.role.replace('_', ' ')} in its own session",
            "network": self.isolation.network,
            "pid_namespace": self.isolation.pid_namespace,
            "memory_limit_bytes": self.memory_bytes,
            "memory_enforced_by": ["resident-memory watchdog"] + (["RLIMIT_AS"] if self.address_space_limited else []),
            "environment": sorted(self.environment),
            "home": "a private temporary directory, also its working directory, removed afterwards",
            "memory_readable_by_others": False,
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
