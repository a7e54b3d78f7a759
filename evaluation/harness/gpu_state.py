"""The GPU's state is part of a measurement: its clocks, temperature and power state, read by the
parent through NVML (the nvidia-ml-py package) before and after the timing, and its clocks locked
where the worker is allowed to (Limits.lock_clocks_mhz; locking needs root or the driver's
permission). NVML is read here, in the parent, never in a process that ran user code. Without NVML
(a CPU host, or the package missing) every function says so and does nothing.
"""

import os
from typing import Any

try:
    import pynvml
except ImportError:  # a CPU host: nothing to read
    pynvml = None

# Consecutive readings of the SM clock within this fraction of each other: the clock has settled.
STEADY_CLOCK_FRACTION = 0.01


class Gpu:
    def __init__(self) -> None:
        self.handle: object | None = None  # NVML's handle of the device (opaque)
        self.why: str | None = None
        self.locked = False
        if pynvml is None:
            self.why = "NVML is not installed (pip install nvidia-ml-py)"
            return
        try:
            pynvml.nvmlInit()
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(_visible_index())
        except Exception as exc:  # noqa: BLE001  (no driver, no device: the verdict says so)
            self.why = f"NVML could not open the device: {exc}"

    def read(self) -> dict[str, Any]:
        """SM and memory clocks (MHz), temperature (C), power draw (W), performance state and the
        reasons the clocks are held down, as NVML reports them now."""
        if self.handle is None:
            return {"unavailable": self.why}
        h, nvml = self.handle, pynvml
        state: dict[str, Any] = {}
        for key, read in (
            ("sm_clock_mhz", lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)),
            ("memory_clock_mhz", lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM)),
            ("max_sm_clock_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(h, nvml.NVML_CLOCK_SM)),
            ("temperature_c", lambda: nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU)),
            ("power_w", lambda: nvml.nvmlDeviceGetPowerUsage(h) / 1000),
            ("performance_state", lambda: f"P{nvml.nvmlDeviceGetPerformanceState(h)}"),
            (
                "throttle_reasons",
                lambda: _reasons(
                    nvml.nvmlDeviceGetCurrentClocksEventReasons(h)
                    if hasattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons")
                    else nvml.nvmlDeviceGetCurrentClocksThrottleReasons(h)
                ),
            ),
        ):
            try:
                state[key] = read()
            except Exception:  # noqa: BLE001  (a field this driver does not report)
                state[key] = None
        return state

    def lock(self, mhz: int | None) -> str:
        """Lock the SM clock at `mhz` if asked and allowed; what happened, in words."""
        if not mhz:
            return "not locked (the worker was not asked to lock clocks)"
        if self.handle is None:
            return f"not locked: {self.why}"
        try:
            pynvml.nvmlDeviceSetGpuLockedClocks(self.handle, mhz, mhz)
        except Exception as exc:  # noqa: BLE001
            return f"not locked: the driver refused ({exc})"
        self.locked = True
        return f"locked at {mhz} MHz"

    def unlock(self) -> None:
        if self.locked:
            try:
                pynvml.nvmlDeviceResetGpuLockedClocks(self.handle)
            except Exception:  # noqa: BLE001
                pass
            self.locked = False


def steady(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether two readings show a settled SM clock (always, where there is nothing to read)."""
    a: float | None = before.get("sm_clock_mhz")
    b: float | None = after.get("sm_clock_mhz")
    if not a or not b:
        return True
    return abs(a - b) <= STEADY_CLOCK_FRACTION * max(a, b)


def _visible_index() -> int:
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


_REASONS = {
    0x1: "idle",
    0x2: "application clocks",
    0x4: "power cap",
    0x8: "hardware slowdown",
    0x20: "thermal (software)",
    0x40: "thermal (hardware)",
    0x80: "power brake",
    0x100: "display clocks",
}


def _reasons(mask: int) -> list[str]:
    return [name for bit, name in _REASONS.items() if mask & bit]
