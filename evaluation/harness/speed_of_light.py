"""The fastest any implementation of a problem could run on a device: the FLOPs the reference
must do over the device's measured matrix rate, or the bytes it must move (inputs and weights
read once, outputs written once) over its measured bandwidth, whichever is larger. A candidate
faster than that floor did not do the work (or found algebra the reference did not use); it is
flagged, not rejected."""

from typing import Any


def floor_ms(flops: int, nbytes: int, rates: dict[str, Any] | None) -> dict[str, Any] | None:
    if not rates or not rates.get("bandwidth_gb_s") or not rates.get("matrix_tflop_s"):
        return None
    compute_ms = flops / (rates["matrix_tflop_s"] * 1e12) * 1e3
    memory_ms = nbytes / (rates["bandwidth_gb_s"] * 1e9) * 1e3
    return {
        "floor_ms": max(compute_ms, memory_ms),
        "compute_ms": compute_ms,
        "memory_ms": memory_ms,
        "bound": "compute" if compute_ms > memory_ms else "memory",
        "flops": flops,
        "bytes": nbytes,
        "rates": rates,
    }


def beyond(candidate_ms: float | None, floor: dict[str, Any] | None) -> bool:
    return bool(floor and candidate_ms is not None and floor["floor_ms"] > 0 and candidate_ms < floor["floor_ms"])
