"""What one verification may spend (Limits) and how thoroughly it checks and times (Plan).

Both are plain frozen dataclasses with production defaults; tests shrink them. `verify()` takes
either an instance or a dict of the fields to change, so the worker can pass settings through.
"""

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True)
class Limits:
    # The evaluation actor's own limit is 1800 s; the harness finishes (with a verdict) before it.
    wall_time_s: float = 1500.0
    # Starting a process (torch's import, CUDA's context), inspecting the problem, and compiling
    # and capturing the baselines before the candidate loads.
    start_time_s: float = 600.0
    # Importing the candidate and building its first instance: load_inline and Triton builds.
    build_time_s: float = 600.0
    # Any one request after the build: a call, a reference, a comparison, a profile.
    call_time_s: float = 120.0
    # Resident memory of the whole process tree of each sandboxed process.
    memory_bytes: int = 32 * 2**30
    # The candidate process's share of GPU memory; the reference process (float64) needs the rest.
    gpu_memory_fraction: float = 0.5
    # Where load_inline and Triton keep builds, keyed by the candidate's source hash; None: a
    # folder under the system's temporary directory.
    build_cache_dir: str | None = None
    # A file locked (flock) while this verification uses the GPU: shared from inspecting the problem
    # to the last call, exclusive while timing. Verifications sharing it overlap their start-up,
    # builds and checks, never a measurement (pipeline.DeviceLock).
    device_lock_path: str | None = None


@dataclass(frozen=True)
class Plan:
    # Model instances (fresh weights from a secret seed) checked one after the other.
    trials: int = 2
    # Fresh input sets checked against the reference per trial.
    inputs_per_trial: int = 2
    # Rounds (one call of each side) before samples count.
    warmup_rounds: int = 3
    min_samples: int = 20
    max_samples: int = 200
    # Stop sampling once the 95% interval of every median is within this fraction of it.
    target_ci: float = 0.005
    timing_budget_s: float = 30.0
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


def coerce(kind, value):
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
