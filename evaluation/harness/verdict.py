"""The verdict: the one schema shared by the CLI, the worker, the API and the pages.

A verdict is plain JSON-able data. Its top-level keys are the contract; the platform stores the
whole verdict and indexes a few of its figures (status, speedups, precision tier, flags).
"""

from typing import TypedDict

# Bumped whenever a change could alter a verdict; evaluations are unique per version.
HARNESS_VERSION = "15"

VERIFIED = "verified"
INCORRECT = "incorrect"
REJECTED = "rejected"
ERROR = "error"
TIMEOUT = "timeout"
CRASHED = "crashed"
STATUSES = (VERIFIED, INCORRECT, REJECTED, ERROR, TIMEOUT, CRASHED)

PRECISION_TIERS = ("exact-fp32", "tf32-level", "half-level")

# A speedup beats its baseline only where its whole 95% interval lies above this (CUDA-L1 counts > 1.01x).
BEATS = 1.01

# The baselines a candidate is timed against, by the names the CLI and the verdict use.
BASELINES = ("eager", "compile", "compile-ro", "cudagraph")


class Check(TypedDict):
    name: str
    passed: bool
    detail: str


class Correctness(TypedDict, total=False):
    trials: int
    inputs_per_trial: int
    checked_calls: int
    checked_timed_calls: int
    max_abs_error: float
    max_rel_error: float
    rel_l2_error: float
    atol: float
    rtol: float
    error_measure: str
    precision_tier: str
    reference_precision: str
    float32_reference_error: float
    output_scale: float
    inputs: list
    shape_check: dict


class Measurement(TypedDict):
    median_ms: float
    iqr_ms: float
    samples: int


class BaselineMeasurement(Measurement, total=False):
    cached: bool  # taken from the baseline cache, not measured in this run


class Timing(TypedDict, total=False):
    # Which measure the top-level figures are: "steady_state" (calls back to back) where measured.
    headline: str
    method: str
    candidate: Measurement
    baselines: dict[str, BaselineMeasurement]
    speedups: dict[str, float]
    unavailable: dict[str, str]
    candidate_ci_fraction: float
    # CUDA: the harness's own wake-up after each call's synchronize, taken off every sample (timing.py).
    harness_wake_up_ms: float
    # CUDA: the host's own time inside the timed calls, median per measured side (flag host_bound).
    host_ms: dict[str, float]
    speed_of_light: dict
    wall_clock: dict
    # 95% intervals of the speedups: where a second verification in fresh processes reads (the rounds'
    # paired bootstrap widened by the device's spread between processes), and which beat their baseline.
    speedup_intervals: dict[str, list[float]]
    beats: dict[str, bool]
    # The rounds' own intervals (one pair of processes), and the device's spread between pairs of
    # processes from its kept A/A controls (measurement.between_process: its relative and absolute parts,
    # and `spread` at `at_ms`, the shortest call of a stated ratio, measurement.spread_at).
    within_process_intervals: dict[str, list[float]]
    between_process: dict
    converged: bool
    stopped_by: str
    # Each measure in full: steady_state, latency (and device_time where measured).
    measures: dict
    # The GPU's clocks, temperature and power state before and after timing (gpu_state.py).
    gpu: dict


class KernelLaunch(TypedDict):
    name: str
    count: int


class Kernels(TypedDict, total=False):
    candidate: list[KernelLaunch]
    reference: list[KernelLaunch]


class Verdict(TypedDict, total=False):
    harness_version: str
    status: str
    reason: str
    checks: list[Check]
    correctness: Correctness
    timing: Timing
    flags: list[str]
    flag_details: dict[str, str]
    kernels: Kernels
    static: dict
    problem: dict
    env: dict
    sandbox: dict
    log_excerpt: str
    # Where the verification's wall time went: seconds per step (start_up, prepare (which inspects
    # the problem beside it), load, check, time, profile, shapes), the time spent waiting for the
    # device lock, and the total.
    cost: dict
