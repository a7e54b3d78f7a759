"""What a candidate could change around itself: global state, functions, threads and processes.

`GlobalState` reads and sets the switches that change numerics or speed (TF32, cuDNN flags,
matmul precision, default dtype and device, threads, autocast, tracing hooks, torch modes).
The harness applies the original state before every baseline call and the candidate's own state
before every candidate call, so what a candidate switches on never leaks into a baseline.

`NamespaceSnapshot` holds the very objects found in torch's, Python's and the harness's own
namespaces before the candidate loads; comparing identities afterwards finds any patched timer,
comparison, torch function or harness function, wherever the candidate reached it from. No
change is excused after the snapshot: torch.compile's own one-time changes to torch are made
before it (`prime_compiler`).

`busy_threads` lists the threads that could still be working after a call.
"""

import concurrent.futures.thread
import dis
import gc
import os
import queue
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

_current_frames = sys._current_frames
_getpid = os.getpid
_getitimer = signal.getitimer
_ITIMERS = (("real", signal.ITIMER_REAL), ("virtual", signal.ITIMER_VIRTUAL), ("prof", signal.ITIMER_PROF))
_audit_hook_attempts: list[str] = []


def _refuse_audit_hooks(event: str, args: tuple[object, ...]) -> None:
    # Audit hooks cannot be removed once added and run on events anywhere in the process: refused.
    if event == "sys.addaudithook":
        _audit_hook_attempts.append(event)
        raise RuntimeError("the harness does not allow audit hooks in a candidate's process")


def refuse_audit_hooks() -> None:
    """Installed before any user code loads: every later sys.addaudithook (or PySys_AddAuditHook)
    raises, and the attempt is remembered as a fact."""
    sys.addaudithook(_refuse_audit_hooks)


def _posix_timers() -> int:
    try:
        with open("/proc/self/timers") as handle:
            return sum(1 for line in handle if line.startswith("ID:"))
    except OSError:
        return 0


_SIGNALS = sorted(signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP})


def _signal_handlers() -> str:
    """The Python handler of every signal. Native handlers that libraries install (the CUDA driver's,
    Triton's) are not the candidate's Python code; none of them can run inside the call site's window,
    which blocks every signal on its thread."""
    found = []
    for sig in _SIGNALS:
        try:
            handler = signal.getsignal(sig)
        except (OSError, ValueError):
            continue
        found.append((int(sig), handler if isinstance(handler, int) or handler is None else id(handler)))
    return repr(found)


def _cuda() -> bool:
    return bool(torch.cuda.is_available() and torch.cuda.is_initialized())


def _hook_counts() -> dict[str, int]:
    from torch.nn.modules import module as nn_module

    names = [n for n in dir(nn_module) if n.startswith("_global_") and n.endswith("hooks")]
    return {n: len(getattr(nn_module, n)) for n in sorted(names)}


# A switch: (read, write); write is None for what can only be observed.
_Switch = tuple[Callable[[], object], Callable[[Any], object] | None]


# name -> its switch.
def _switches() -> dict[str, _Switch]:
    cuda_backend = torch.backends.cuda
    cudnn = torch.backends.cudnn
    switches: dict[str, _Switch] = {
        "matmul.allow_tf32": (lambda: cuda_backend.matmul.allow_tf32, lambda v: setattr(cuda_backend.matmul, "allow_tf32", v)),
        "matmul.allow_fp16_reduced_precision_reduction": (
            lambda: cuda_backend.matmul.allow_fp16_reduced_precision_reduction,
            lambda v: setattr(cuda_backend.matmul, "allow_fp16_reduced_precision_reduction", v),
        ),
        "matmul.allow_bf16_reduced_precision_reduction": (
            lambda: cuda_backend.matmul.allow_bf16_reduced_precision_reduction,
            lambda v: setattr(cuda_backend.matmul, "allow_bf16_reduced_precision_reduction", v),
        ),
        "float32_matmul_precision": (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
        "cudnn.enabled": (lambda: cudnn.enabled, lambda v: setattr(cudnn, "enabled", v)),
        "cudnn.allow_tf32": (lambda: cudnn.allow_tf32, lambda v: setattr(cudnn, "allow_tf32", v)),
        "cudnn.benchmark": (lambda: cudnn.benchmark, lambda v: setattr(cudnn, "benchmark", v)),
        "cudnn.deterministic": (lambda: cudnn.deterministic, lambda v: setattr(cudnn, "deterministic", v)),
        "mkldnn.enabled": (lambda: torch.backends.mkldnn.enabled, lambda v: setattr(torch.backends.mkldnn, "enabled", v)),
        "sdp.flash": (cuda_backend.flash_sdp_enabled, cuda_backend.enable_flash_sdp),
        "sdp.mem_efficient": (cuda_backend.mem_efficient_sdp_enabled, cuda_backend.enable_mem_efficient_sdp),
        "sdp.math": (cuda_backend.math_sdp_enabled, cuda_backend.enable_math_sdp),
        "default_dtype": (
            lambda: str(torch.get_default_dtype()),
            lambda v: torch.set_default_dtype(getattr(torch, v.removeprefix("torch."))),
        ),
        "default_device": (lambda: str(torch.get_default_device()), lambda v: torch.set_default_device(v)),
        "deterministic_algorithms": (torch.are_deterministic_algorithms_enabled, torch.use_deterministic_algorithms),
        "num_threads": (torch.get_num_threads, torch.set_num_threads),
        "grad_enabled": (torch.is_grad_enabled, torch.set_grad_enabled),
        "autocast.cpu": (lambda: torch.is_autocast_enabled("cpu"), lambda v: torch.set_autocast_enabled("cpu", v)),
        "autocast.cuda": (lambda: torch.is_autocast_enabled("cuda"), lambda v: torch.set_autocast_enabled("cuda", v)),
        "sys.trace": (lambda: repr(sys.gettrace()), None),
        "sys.profile": (lambda: repr(sys.getprofile()), None),
        "threading.trace": (lambda: repr(threading.gettrace()), None),
        "threading.profile": (lambda: repr(threading.getprofile()), None),
        "switch_interval": (sys.getswitchinterval, sys.setswitchinterval),
        "gc.enabled": (gc.isenabled, lambda v: gc.enable() if v else gc.disable()),
        "torch_function_modes": (lambda: torch._C._len_torch_function_stack(), None),
        "torch_dispatch_modes": (lambda: torch._C._len_torch_dispatch_stack(), None),
        "module_hooks": (lambda: repr(_hook_counts()), None),
        # Code that can run outside the candidate's calls, by the interpreter's own routes.
        "gc.callbacks": (lambda: repr([id(c) for c in gc.callbacks]), None),
        "signal_handlers": (_signal_handlers, None),
        "interval_timers": (lambda: repr([name for name, which in _ITIMERS if _getitimer(which)[0] > 0]), None),
        "posix_timers": (_posix_timers, None),
        "import_hooks": (lambda: repr([id(h) for h in sys.meta_path] + [id(h) for h in sys.path_hooks]), None),
        "audit_hooks": (lambda: len(_audit_hook_attempts), None),
    }
    if _cuda():
        switches["cuda.current_stream"] = (
            lambda: torch.cuda.current_stream().cuda_stream == torch.cuda.default_stream().cuda_stream,
            lambda v: torch.cuda.set_stream(torch.cuda.default_stream()) if v else None,
        )
    return switches


@dataclass
class GlobalState:
    values: dict[str, object]

    @classmethod
    def capture(cls) -> "GlobalState":
        values: dict[str, object] = {}
        for name, (read, _) in _switches().items():
            try:
                values[name] = read()
            except Exception as exc:  # noqa: BLE001  (a switch this build lacks)
                values[name] = f"unreadable: {type(exc).__name__}"
        return cls(values)

    def apply(self) -> None:
        switches = _switches()
        for name, value in self.values.items():
            switch = switches.get(name)
            if switch is None:
                continue
            read, write = switch
            if write is None or (isinstance(value, str) and value.startswith("unreadable")):
                continue
            try:
                if read() != value:
                    write(value)
            except Exception:  # noqa: BLE001  (a switch this build lacks)
                pass

    def changes_from(self, original: "GlobalState") -> dict[str, dict[str, object]]:
        return {
            name: {"before": original.values.get(name), "after": value}
            for name, value in self.values.items()
            if original.values.get(name) != value
        }


_CODE_LIKE = (types.ModuleType, property, staticmethod, classmethod, types.GetSetDescriptorType, types.MemberDescriptorType)
_MISSING = object()
# sys attributes Python itself rebinds as it runs.
_SYS_VOLATILE = {
    "last_type",
    "last_value",
    "last_traceback",
    "last_exc",
    "exc_info",
    "ps1",
    "ps2",
    "_git",
    "stdout",
    "stderr",
    "__stdout__",
    "__stderr__",
    "modules",
    "path_importer_cache",
    "meta_path",
    "path_hooks",
    "path",
    "flags",
    "monitoring",
}


# A watched attribute: (name, value, and a function's code and defaults, or None and None).
_Watched = tuple[str, Any, types.CodeType | None, tuple[Any, ...] | None]


def _watched_items(label: str, obj: object) -> tuple[dict[str, Any], list[_Watched]]:
    """The live namespace of `obj` and (name, value, code, defaults) for each callable or type in it."""
    try:
        namespace = vars(obj)
    except TypeError:
        return {}, []
    items: list[_Watched] = []
    for name, value in list(namespace.items()):
        # Plain data (flags, counters, caches) changes as torch runs; code and types do not.
        if not (callable(value) or isinstance(value, _CODE_LIKE)):
            continue
        if label == "sys" and name in _SYS_VOLATILE:
            continue
        if isinstance(value, types.FunctionType):
            items.append((name, value, value.__code__, value.__defaults__))
        else:
            items.append((name, value, None, None))
    return namespace, items


def watched_namespaces(extra: Sequence[tuple[str, object]] = ()) -> list[tuple[str, object]]:
    """What the harness, the baselines and the timers rely on."""
    import builtins

    watched = [
        ("builtins", builtins),
        ("time", time),
        ("os", os),
        ("sys", sys),
        ("gc", gc),
        ("threading", threading),
        ("torch", torch),
        ("torch.Tensor", torch.Tensor),
        ("torch._C.TensorBase", torch._C.TensorBase),
        ("torch._C", torch._C),
        ("torch._C._VariableFunctions", torch._C._VariableFunctions),
        ("torch._C._nn", torch._C._nn),
        ("torch._C._linalg", torch._C._linalg),
        ("torch._C._fft", torch._C._fft),
        ("torch._C._special", torch._C._special),
        ("torch.nn.functional", torch.nn.functional),
        ("torch.nn.init", torch.nn.init),
        ("torch.linalg", torch.linalg),
        ("torch.fft", torch.fft),
        ("torch.special", torch.special),
        ("torch.random", torch.random),
        ("torch.cuda", torch.cuda),
        ("torch.cuda.Event", torch.cuda.Event),
        ("torch.cuda.Stream", torch.cuda.Stream),
        ("torch.backends.cudnn", torch.backends.cudnn),
        ("torch.autograd.grad_mode", torch.autograd.grad_mode),
        ("torch.nn.Module", torch.nn.Module),
        ("torch.nn.modules.module", torch.nn.modules.module),
        ("torch.utils.flop_counter", sys.modules.get("torch.utils.flop_counter")),
        ("torch.profiler", torch.profiler),
        ("kernel_court_callsite", sys.modules.get("kernel_court_callsite")),
    ]
    for name in dir(torch.nn):
        value = getattr(torch.nn, name)
        if isinstance(value, type) and issubclass(value, torch.nn.Module):
            watched.append((f"torch.nn.{name}", value))
    for name, module in list(sys.modules.items()):
        if name.startswith("evaluation.harness") and module is not None:
            watched.append((name, module))
            for attr, value in list(vars(module).items()):
                if isinstance(value, type) and value.__module__ == name:
                    watched.append((f"{name}.{attr}", value))
    watched.extend(extra)
    return [(label, obj) for label, obj in watched if obj is not None]


class NamespaceSnapshot:
    """Strong references to every watched attribute (so no id is ever reused), compared by identity,
    with each function's code and defaults."""

    def __init__(self, namespaces: list[tuple[str, object]]):
        self._watched: list[tuple[str, dict[str, Any], list[_Watched]]] = [
            (label, *_watched_items(label, obj)) for label, obj in namespaces
        ]

    def __len__(self) -> int:
        return sum(len(items) for _, _, items in self._watched)

    def changed(self, limit: int = 20) -> list[str]:
        changed = []
        for label, namespace, items in self._watched:
            for name, value, code, defaults in items:
                current = namespace.get(name, _MISSING)
                if current is not value or (
                    code is not None and (value.__code__ is not code or value.__defaults__ is not defaults)
                ):
                    changed.append(f"{label}.{name}")
                    if len(changed) >= limit:
                        return changed
        return changed


def _first_use(_: object) -> None:
    return None


def prime_compiler() -> None:
    """Let torch.compile make its one-time changes to torch before the snapshot: importing
    torch._dynamo rewraps torch.manual_seed, and entering it the first time wraps
    torch.nn.Module.__init__ and __setstate__ to tag new modules. A candidate that compiles (or a
    profile, which imports torch._dynamo) then changes nothing the snapshot holds."""
    torch.compile(_first_use, backend="eager")(torch.zeros(1))


def quiet_library_threads() -> None:
    """Threads a library starts of its own accord, stopped before the candidate loads: tqdm's
    monitor, a daemon waking every 10 s that any progress bar starts (torch.compile's autotuning
    shows one where tqdm is installed), would count as the candidate's background thread. tqdm
    documents `monitor_interval = 0` as the switch; a candidate that turns it back on owns the thread."""
    try:
        from tqdm import std  # type: ignore[import-untyped]  # tqdm ships no types (nor is types-tqdm installed)
    except ImportError:
        return
    std.tqdm.monitor_interval = 0


def thread_ids() -> set[int]:
    return set(_current_frames())


# A concurrent.futures worker blocked on its empty queue runs nothing, and only a submit wakes it,
# which only a (timed) call can make: torch.compile's compile and autotuning pools leave such
# workers behind. Told apart by the code it runs and the line it waits at, not by a name.
_WORKER_CODE = concurrent.futures.thread._worker.__code__
# (An instruction's positions are never None in CPython 3.11+; the test only narrows the type.)
_WAITING_LINES = {i.positions.lineno for i in dis.get_instructions(_WORKER_CODE) if i.argval == "get" and i.positions is not None}
_SimpleQueue = queue.SimpleQueue


def _idle_worker(frame: types.FrameType) -> bool:
    if frame.f_code is not _WORKER_CODE or frame.f_lineno not in _WAITING_LINES:
        return False
    work_queue = frame.f_locals.get("work_queue")
    return type(work_queue) is _SimpleQueue and work_queue.empty()


def busy_threads(known: set[int]) -> list[int]:
    """Threads other than `known` that are running or may run by themselves: all but idle pool workers."""
    return sorted(ident for ident, frame in _current_frames().items() if ident not in known and not _idle_worker(frame))


def child_pids() -> set[int]:
    """Processes other than this one: in the sandbox's own PID namespace every other process there
    but those that came before this one (bubblewrap's init, 1, and where the process was forked into
    the sandbox, its holder, 2: this process is 2 or 3), a daemon that left this process's tree by a
    double fork included (a PID namespace never gives a new process a number below 300 again);
    without one, this process's children."""
    pid = _getpid()
    if pid in (2, 3):
        try:
            return {int(p) for p in os.listdir("/proc") if p.isdigit()} - set(range(1, pid + 1))
        except OSError:
            pass
    found: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found.update(int(p) for p in handle.read().split())
        except OSError:
            continue
    return found
