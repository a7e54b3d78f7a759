"""Timing one call, the same way for candidate and baselines: through the call site (callsite.c).

CUDA: the cache is flushed (a buffer twice the L2's size is written), the device synchronized, a
start event recorded, the call made, an event recorded on the calling stream as soon as it
returns, then a device-wide synchronize and the end event, so work the call left on any stream or
from any thread is inside the interval. That interval also holds the host's own wake-up after the
synchronize (~30 us on an H100 host), which would pull every speedup of a short kernel towards 1;
the parent takes off the median gap between the two events over the eager baseline's calls, never
leaving less than the calling stream's interval (`Evidence.timed_samples`). CUDA samples also carry
the host's own time inside the call, flagged `host_bound` where it is most of a sample.
CPU: a monotonic clock around the call, after the same kind of flush through the last-level cache.

The call site writes each call's times to the parent itself (a socket no Python code of this process
handles, each record tagged under a key no Python code of it holds), and its outputs to the reference
process, inside a window in which no other Python code runs: callsite.c says how, DEVELOPERS.md why.
"""

import importlib
import sys
from collections.abc import Callable
from typing import Any, Protocol, TypedDict, cast

import torch

_synchronize = torch.cuda.synchronize

CPU_FLUSH_BYTES = 32 * 2**20
CUDA_DRIVER = "libcuda.so.1"


class _CallSite(Protocol):
    """The call site's module (callsite.c, a C extension without stubs): what this module uses of it."""

    Fault: type[RuntimeError]

    def init(
        self,
        *,
        tensor_type: type,
        to_dlpack: Callable[..., object],
        cuda_driver: str | None,
        flush_bytes: int,
        capture_fd: int,
        input_fd: int,
        timing_fd: int,
        max_output_bytes: int,
        poison_outputs: bool = False,
        every_call_captured: bool = False,
        key_fd: int = -1,
    ) -> None: ...

    # {"result", "error", "ms", "stream_ms", "host_ms", "captured", "inputs_modified", "sequence"}
    def call(
        self,
        fn: Callable[..., object],
        args: tuple[object, ...],
        slots: tuple[torch.Tensor, ...] | None,
        *,
        capture: bool = False,
    ) -> dict[str, Any]: ...

    # {"results", "error", "count"}
    def burst(
        self,
        fn: Callable[..., object],
        args: tuple[object, ...],
        slots: tuple[torch.Tensor, ...],
        *,
        capture: bool = False,
        gate: bool = True,
    ) -> dict[str, Any]: ...

    def recheck(self) -> list[int]: ...


class CallSiteFds(TypedDict):
    """The call site's file descriptors, as `start` takes them."""

    timing_fd: int
    capture_fd: int
    input_fd: int
    key_fd: int


def _load_site() -> _CallSite:
    """The call site's module: on the sandbox's path, or (tests and benchmarks in one process) built here."""
    try:
        return cast(_CallSite, importlib.import_module("kernel_court_callsite"))
    except ImportError:
        from evaluation.harness import callsite

        sys.path.append(str(callsite.build()))
        return cast(_CallSite, importlib.import_module("kernel_court_callsite"))


_site = _load_site()
Fault = _site.Fault


def settle(device: str) -> None:
    """Wait for all the device's work, on every stream."""
    if device == "cuda":
        _synchronize()


def default_flush_bytes(device: str) -> int:
    if device == "cuda":
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 * 2**20) or 50 * 2**20
        return 2 * l2
    return CPU_FLUSH_BYTES


def start(
    device: str,
    *,
    flush_bytes: int | None,
    timing_fd: int,
    key_fd: int = -1,
    capture_fd: int = -1,
    input_fd: int = -1,
    max_output_bytes: int = 0,
    poison_outputs: bool = False,
    every_call_captured: bool = False,
) -> int:
    """Set the call site up (once per process, before any user code loads); the flush size in bytes.
    `poison_outputs`: overwrite each captured output before the next call (off where the reference
    itself returns memory its model keeps). `every_call_captured` (the candidate's process): refuse
    any call whose inputs do not come from the pipe or whose outputs are not captured."""
    size = default_flush_bytes(device) if flush_bytes is None else flush_bytes
    _site.init(
        tensor_type=torch.Tensor,
        to_dlpack=torch._C._to_dlpack,
        cuda_driver=CUDA_DRIVER if device == "cuda" else None,
        flush_bytes=size,
        capture_fd=capture_fd,
        input_fd=input_fd,
        timing_fd=timing_fd,
        key_fd=key_fd,
        max_output_bytes=max_output_bytes,
        poison_outputs=poison_outputs,
        every_call_captured=every_call_captured,
    )
    return size


def call(fn: Callable[..., object], args: list[Any], slots: tuple[torch.Tensor, ...] | None, *, capture: bool) -> dict[str, Any]:
    """One call: its result (or the exception it raised) and, for this process's own bookkeeping,
    the times the call site also wrote to the parent."""
    return _site.call(fn, tuple(args), slots, capture=capture)


def burst(
    fn: Callable[..., object], args: list[Any], slots: tuple[torch.Tensor, ...], *, capture: bool, gate: bool = True
) -> dict[str, Any]:
    """Calls back to back until the reference process ends the burst (callsite.c, burst): their
    results, the exception that stopped them (or None), and how many ran. Their times go to the parent.
    `gate` (CUDA): the device waits for the host to have issued each whole call before running it."""
    return _site.burst(fn, tuple(args), slots, capture=capture, gate=gate)


def recheck() -> list[int]:
    """Indices of the last call's captured outputs whose bytes have changed since the capture."""
    return _site.recheck()


def method(device: str, flush_bytes: int) -> str:
    if device == "cuda":
        return (
            f"CUDA events around each call, end recorded after a device-wide synchronize, less the harness's own "
            f"wake-up after it (the eager calls' median gap to an event on the calling stream), never less than "
            f"the calling stream's own interval; {flush_bytes / 2**20:.0f} MiB written to flush L2 before each call; "
            f"fresh inputs every call; candidate and baseline calls interleaved in shuffled rounds, each side in its "
            f"own process; median"
        )
    return (
        f"a monotonic clock around each call; {flush_bytes / 2**20:.0f} MiB written to flush caches before each call; "
        f"fresh inputs every call; candidate and baseline calls interleaved in shuffled rounds, each side in its own "
        f"process; median"
    )
