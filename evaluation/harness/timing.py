"""Timing one call, the same way for candidate and baselines, with clocks taken before any
candidate code loads.

CUDA: the cache is flushed by writing a buffer twice the L2's size, the device is synchronized,
a start event is recorded, the call runs, and the end event is recorded only after a device-wide
synchronize, so work the call left on any stream or from any thread is inside the interval.
That interval also holds the host's own wake-up after the synchronize (~30 us on an H100 host),
which would pull every speedup of a short kernel towards 1. So a second event is recorded on the
calling stream as soon as the call returns, and the parent takes as the sample the end event
minus the harness's own wake-up, never less than the calling stream's interval
(`Evidence.timed_samples`): the wake-up is the median gap between the two events over the eager
baseline's calls, which leave nothing on other streams. Work left on another stream stays inside.
CUDA samples also carry the host's own time inside the call (`perf_counter` around it): a call of
small launches from Python can keep the host busy for most of its sample, the GPU waiting on it
(benchmarks/RESULTS.md, the host's launch after a pause), which the verdict flags as `host_bound`.
CPU: `perf_counter` around the call, after the same kind of flush through the last-level cache.
Every call is timed, including the ones whose outputs are checked in full, so the candidate
cannot tell a checked call from a timed one.
"""

import time

import torch

# Captured at import, before any candidate loads; the namespace snapshot proves they are intact.
_perf_counter = time.perf_counter
_Event = torch.cuda.Event
_record = torch.cuda.Event.record
_elapsed_time = torch.cuda.Event.elapsed_time
_event_synchronize = torch.cuda.Event.synchronize
_synchronize = torch.cuda.synchronize
_zero_ = torch.Tensor.zero_

CPU_FLUSH_BYTES = 32 * 2**20


def settle(device: str) -> None:
    """Wait for all the device's work, on every stream (the clock-taken synchronize)."""
    if device == "cuda":
        _synchronize()


def default_flush_bytes(device: str) -> int:
    if device == "cuda":
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 * 2**20) or 50 * 2**20
        return 2 * l2
    return CPU_FLUSH_BYTES


class Timer:
    def __init__(self, device: str, flush_bytes: int | None):
        self.device = device
        size = default_flush_bytes(device) if flush_bytes is None else flush_bytes
        self.flush_bytes = size
        self._flush = torch.empty(max(size // 4, 1), dtype=torch.int32, device=device)

    @property
    def method(self) -> str:
        if self.device == "cuda":
            return (f"CUDA events around each call, end recorded after a device-wide synchronize, less the harness's own "
                    f"wake-up after it (the eager calls' median gap to an event on the calling stream), never less than "
                    f"the calling stream's own interval; {self.flush_bytes / 2**20:.0f} MiB written to flush L2 before each call; "
                    f"fresh inputs every call; candidate and baseline calls interleaved in shuffled rounds; median")
        return (f"time.perf_counter around each call; {self.flush_bytes / 2**20:.0f} MiB written to flush caches "
                f"before each call; fresh inputs every call; candidate and baseline calls interleaved in shuffled "
                f"rounds; median")

    def time(self, fn, args: list):
        """(result, milliseconds to the device-wide end, milliseconds to the calling stream's end,
        milliseconds the host spent inside the call) of one call; on the CPU the last two are None."""
        _zero_(self._flush)
        if self.device == "cuda":
            start, returned, end = (_Event(enable_timing=True) for _ in range(3))
            _synchronize()
            _record(start)
            began = _perf_counter()
            result = fn(*args)
            host_ms = (_perf_counter() - began) * 1e3
            _record(returned)
            _synchronize()
            _record(end)
            _event_synchronize(end)
            return result, _elapsed_time(start, end), _elapsed_time(start, returned), host_ms
        begin = _perf_counter()
        result = fn(*args)
        return result, (_perf_counter() - begin) * 1e3, None, None
