"""What one verification may spend (Limits) and how thoroughly it checks and times (Plan).

Both are plain frozen dataclasses with production defaults; tests shrink them. `verify()` takes
either an instance or a dict of the fields to change, so the worker can pass settings through.
"""

import os
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

# The fewest rounds a ratio's bootstrap interval is drawn from (measurement.speedup_interval). With
# fewer, a verdict has no interval at all, and a null result's stated 1.0 nothing to keep a loss by.
INTERVAL_ROUNDS = 3


@dataclass(frozen=True)
class Limits:
    # The evaluation actor's own limit is 1800 s; the harness finishes (with a verdict) before it.
    wall_time_s: float = 1500.0
    # Starting a process (torch's import, CUDA's context), inspecting the problem, and compiling
    # and capturing the baselines before the candidate loads.
    start_time_s: float = 600.0
    # Importing the candidate, building its first instance and, where its source names something
    # that compiles at the first call (torch.compile, Triton, load_inline), that first call.
    build_time_s: float = 600.0
    # Any one request that is not a candidate's call (a reference, a comparison, a profile), and the
    # most a candidate's call may take.
    call_time_s: float = 120.0
    # A candidate's call after the build: this many times the reference's own eager time, at least
    # call_time_min_s, so a hang ends within a minute on KernelBench's problems (eager at most 30 ms).
    call_time_factor: float = 100.0
    call_time_min_s: float = 20.0
    # The first call of an instance whose source names nothing that compiles then.
    first_call_time_s: float = 60.0
    # Resident memory of each sandboxed process's tree; None: its share of what this host can give
    # (memory_for), never more than that when set.
    memory_bytes: int | None = None
    # GPU memory the candidate's and the baseline's processes may take (torch's per-process fraction);
    # the reference process (float64, falling back to the CPU) has the rest. CUDA-L1's L3 T31 (attention
    # over 16384 positions) needs ~17 GB for its eager baseline.
    gpu_memory_fraction: float = 0.3
    baseline_gpu_memory_fraction: float = 0.3
    # A hack report's proof inputs, at most.
    proof_input_bytes: int = 8 * 2**30
    # Per sandboxed process: processes and threads, open files, the size of a file it writes.
    processes: int = 8192
    open_files: int = 4096
    file_size_bytes: int = 2 * 2**30
    # A candidate's (or a problem's baselines') build cache, at most: while a build runs (the process
    # is stopped there) and after the run (a fuller one is removed).
    build_cache_bytes: int = 4 * 2**30
    # Every build cache of this host together, at most, after a run: the least recently used go first.
    build_caches_bytes: int = 64 * 2**30
    # Refuse to run user code without the OS sandbox (bubblewrap). Only embedded mode turns this
    # off, and the verdict then says the run was not confined.
    require_sandbox: bool = True
    # Where load_inline, Triton and Inductor keep builds: a folder per candidate source (and per
    # problem for the baselines), each written only by sandboxes of that source. None: a folder
    # under the system's temporary directory.
    build_cache_dir: str | None = None
    # A file locked (flock) while this verification uses the device, from its processes' first touch
    # of it to their end: verifications sharing it overlap only their sandboxes' start and torch's
    # import (device_lock.DeviceLock).
    device_lock_path: str | None = None
    # Lock the GPU's SM clock at this many MHz while timing, where the driver allows it (gpu_state.py).
    lock_clocks_mhz: int | None = None

    def __post_init__(self) -> None:
        # Absolute from the start: the sandboxes bind these paths and run in folders of their own, where
        # a relative one would name another file (a batch given `state/builds` wrote its caches nowhere
        # the next run looked).
        for name in ("build_cache_dir", "device_lock_path"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, os.path.abspath(value))


# Each sandboxed process's share of the memory this host can give: the reference process computes
# in float64 and may fall back to the CPU (CUDA-L1's L3 T31 held 32 GiB there on an H100 host).
MEMORY_SHARES = {"reference": 0.45, "candidate": 0.3, "baseline": 0.15, "proof": 0.1}
# Kept for the operating system, the worker and the web process.
HOST_RESERVE = 0.1


def host_memory_bytes() -> int:
    """The memory this worker can have: the machine's, or its container's limit where lower."""
    total = 16 * 2**30
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    total = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit_file) as handle:
                value = handle.read().strip()
        except OSError:
            continue
        if value.isdigit():
            total = min(total, int(value))
    return total


def memory_for(role: str, limits: "Limits") -> int:
    """The resident memory one sandboxed process may use: its share of the host, capped by Limits."""
    share = int(host_memory_bytes() * (1 - HOST_RESERVE) * MEMORY_SHARES[role])
    return min(share, limits.memory_bytes) if limits.memory_bytes else share


@dataclass(frozen=True)
class Plan:
    # Model instances (fresh weights from a secret seed) checked one after the other.
    trials: int = 2
    # Fresh input sets checked against the reference per trial.
    inputs_per_trial: int = 2
    # Rounds (one call of each side) before samples count.
    warmup_rounds: int = 3
    # Latency: one call at a time on an idle device, the device synchronized after each.
    min_samples: int = 20
    max_samples: int = 100
    # Stop sampling latency once the 95% interval of every median is within this fraction of it.
    target_ci: float = 0.005
    timing_budget_s: float = 15.0
    # Steady state (the headline): rounds of bursts, one burst of each side per round, in shuffled
    # order; a burst is this many calls at most, fewer where their inputs and outputs would pass
    # `burst_bytes` or the eager reference would take more than `burst_ms` over them.
    burst_calls: int = 32
    burst_bytes: int = 256 * 2**20
    burst_ms: float = 100.0
    # Warm-up rounds at most, repeated until the GPU's SM clock has settled (gpu_state.py).
    warm_rounds_most: int = 5
    # At least INTERVAL_ROUNDS: below them no ratio has an interval (measurement.speedup_interval), and
    # the A/A control's comparison, which keeps a null result's loss, would be missing.
    steady_min_rounds: int = 6
    steady_max_rounds: int = 400
    # Stop once every speedup's 95% interval is within this fraction of it, or the budget is spent.
    speedup_target: float = 0.01
    steady_budget_s: float = 20.0
    # Device time (CUDA): each side's call captured in a CUDA graph, its replays timed in bursts as the
    # steady state is, until the same target or this budget.
    device_time: bool = True
    device_time_budget_s: float = 5.0
    bootstrap_resamples: int = 1000
    # Closing rounds, timed like the rest, in which every candidate output is also checked in full.
    timed_checks: int = 3
    # Chance that any other timed (or warm-up) call is checked in full too.
    timed_check_probability: float = 0.25
    # Bytes written between calls to evict the cache; None: twice the GPU's L2 (CPU: 32 MiB).
    flush_bytes: int | None = None
    shape_check: bool = True
    profile: bool = True
    # Count the reference's FLOPs and measure the device's ceilings for the speed-of-light floor.
    speed_of_light: bool = True
    # The A/A control: the reference run as a candidate is (a process of the candidate's shape), timed
    # in the steady state's rounds against eager; where the two differ beyond their interval, this
    # host times processes unalike and no speedup is stated as a win. None: on every CPU verification,
    # whose host is shared with everything else on it, and on a sample of a GPU's (control_share).
    control: bool | None = None
    # On a GPU, this share of verifications runs the control too, judging its own verdict (a probe's
    # control, `pipeline.probe`, is the device's).
    control_share: float = 0.25

    def __post_init__(self) -> None:
        if self.steady_min_rounds < INTERVAL_ROUNDS:
            raise ValueError(
                f"steady_min_rounds ({self.steady_min_rounds}) is under {INTERVAL_ROUNDS}: every speedup's interval and the "
                f"A/A control's comparison are a bootstrap over at least {INTERVAL_ROUNDS} rounds; raise it"
            )
        if self.steady_min_rounds > self.steady_max_rounds:
            raise ValueError(
                f"steady_min_rounds ({self.steady_min_rounds}) is over steady_max_rounds ({self.steady_max_rounds}): "
                "raise the most rounds or lower the least"
            )


# The settings `coerce` builds.
_Fields = TypeVar("_Fields", Limits, Plan)


def coerce(kind: type[_Fields], value: _Fields | dict[str, Any] | None) -> _Fields:
    """An instance of `kind` from None (defaults), an instance, or a dict of fields to change."""
    if value is None:
        return kind()
    if isinstance(value, kind):
        return value
    if isinstance(value, dict):
        known = {f.name for f in fields(kind)}
        unknown = set(value) - known
        if unknown:
            raise ValueError(f"Unknown {kind.__name__} fields {sorted(unknown)}; known: {sorted(known)}.")
        return replace(kind(), **value)
    raise TypeError(f"Expected {kind.__name__}, a dict or None, not {type(value).__name__}.")
