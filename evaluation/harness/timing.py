"""Timing one call, the same way for candidate and baselines, with clocks taken before any
candidate code loads.

CUDA: the cache is flushed by writing a buffer twice the L2's size, the device is synchronized,
a start event is recorded, the call runs, and the end event is recorded only after a device-wide
synchronize, so work the call left on any stream or from any thread is inside the interval.
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
            return (f"CUDA events around each call, end recorded after a device-wide synchronize; "
                    f"{self.flush_bytes / 2**20:.0f} MiB written to flush L2 before each call; "
                    f"fresh inputs every call; candidate and baseline calls interleaved in shuffled rounds; median")
        return (f"time.perf_counter around each call; {self.flush_bytes / 2**20:.0f} MiB written to flush caches "
                f"before each call; fresh inputs every call; candidate and baseline calls interleaved in shuffled "
                f"rounds; median")

    def time(self, fn, args: list):
        """(result, milliseconds) of one call."""
        _zero_(self._flush)
        if self.device == "cuda":
            start, end = _Event(enable_timing=True), _Event(enable_timing=True)
            _synchronize()
            _record(start)
            result = fn(*args)
            _synchronize()
            _record(end)
            _event_synchronize(end)
            return result, _elapsed_time(start, end)
        begin = _perf_counter()
        result = fn(*args)
        return result, (_perf_counter() - begin) * 1e3
