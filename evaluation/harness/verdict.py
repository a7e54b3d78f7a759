"""The verdict: the one schema shared by the CLI, the worker, the API and the pages.

A verdict is plain JSON-able data. Its top-level keys are the contract; the platform stores the
whole verdict and indexes a few of its figures (status, speedups, precision tier, flags).
"""

from typing import Any, NotRequired, TypedDict

# Bumped whenever a change could alter a verdict; evaluations are unique per version.
HARNESS_VERSION = "18"

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
    """One check that ran (checks.CHECKS), in the table's order."""

    name: str  # the check's name, e.g. outputs_match_reference
    passed: bool  # whether it passed; the first that failed decided the status
    detail: str  # what it found, in words; a failure's is the verdict's reason


class VariantCheck(TypedDict):
    """The check at other sizes of the problem's constants (problem_inspection.shapes)."""

    status: str  # passed, failed or untestable
    detail: str  # what was found, or why it could not be tried
    constants: NotRequired[dict[str, Any]]  # the sizes tried, where the reference ran at them


class Correctness(TypedDict, total=False):
    """How right the candidate was, over every compared call (scoring._correctness)."""

    trials: int  # ModelNew instances built and checked, each from a fresh secret weight seed
    inputs_per_trial: int  # fresh input sets per instance (Plan.inputs_per_trial)
    checked_calls: int  # calls compared with the reference, of every phase
    checked_timed_calls: int  # of those, calls drawn in secret from the timed ones
    max_abs_error: float | None  # the largest |c - r| over every compared element
    max_rel_error: float | None  # the largest |c - r| / (|r| + output scale): what the tolerance bounds
    rel_l2_error: float | None  # the largest relative L2 error of an output
    atol: float  # always 0: there is no absolute tolerance
    rtol: float | None  # the tolerance the candidate was held to (the widest over its calls)
    error_measure: str  # how max_rel_error is computed, in words
    precision_tier: str | None  # exact-fp32, tf32-level or half-level (PRECISION_TIERS), from max_rel_error
    reference_precision: str  # what the truth was computed in (float64 on the device, the CPU, float32)
    float32_reference_error: float | None  # the problem's own float32 output's error against float64
    output_scale: float  # the float64 reference's output scale (its capped RMS)
    inputs: list[dict[str, Any]]  # the first trial's inputs, described (dtype, shape)
    shape_check: VariantCheck | None  # the check at other sizes of the problem's constants


class Measurement(TypedDict):
    """One side's samples of one measure."""

    median_ms: float  # the median sample
    iqr_ms: float  # its interquartile range
    samples: int  # how many samples


class BaselineMeasurement(Measurement, total=False):
    cached: bool  # taken from the baseline cache, not measured in this run


class Timing(TypedDict, total=False):
    """How fast the candidate was against each baseline; the top-level figures are the headline measure's."""

    # Which measure the top-level figures are: "steady_state" (calls back to back) where measured.
    headline: str
    method: str | None  # how the calls were timed (CUDA events, the CPU's clock)
    candidate: Measurement  # the candidate's samples
    baselines: dict[str, BaselineMeasurement]  # each baseline's, by name
    speedups: dict[str, float]  # each baseline's median over the candidate's
    unavailable: dict[str, str]  # baselines not measured, and why
    candidate_ci_fraction: float | None  # the candidate median's 95% interval, as a fraction of it
    # CUDA: the harness's own wake-up after each call's synchronize, taken off every sample (timing.py).
    harness_wake_up_ms: float | None
    # CUDA: the host's own time inside the timed calls, median per measured side (flag host_bound).
    host_ms: dict[str, float]
    speed_of_light: dict[str, Any] | None  # the reference's FLOPs and bytes over the device's measured rates
    wall_clock: dict[str, Any]  # the parent's own clock around each whole latency call (not a speed)
    # 95% intervals of the speedups: where a second verification in fresh processes reads (the rounds'
    # paired bootstrap widened by the device's spread between processes), and which beat their baseline.
    speedup_intervals: dict[str, list[float] | None]
    beats: dict[str, bool]
    # Set where the headline is 1.0 by construction, not by measurement: what was measured, and why.
    null_result: dict[str, Any] | None
    control: dict[str, Any] | None  # the A/A control where it ran (flags.aa_control): its speedup, interval, and whether off 1.0
    # The rounds' own intervals (one pair of processes), and the device's spread between pairs of
    # processes from its kept A/A controls (measurement.between_process: its relative and absolute parts,
    # and `spread` at `at_ms`, the shortest call of a stated ratio, measurement.spread_at).
    within_process_intervals: dict[str, list[float] | None]
    between_process: dict[str, Any]
    converged: bool | None  # every interval within the plan's target when the rounds stopped
    stopped_by: str | None  # why the rounds stopped: interval, budget, rounds or wall limit
    # Each measure in full: steady_state, latency (and device_time where measured).
    measures: dict[str, Any]
    # The GPU's clocks, temperature and power state before and after timing (gpu_state.py).
    gpu: dict[str, Any] | None


class KernelLaunch(TypedDict):
    name: str  # the kernel's name, as the profiler saw it
    count: int  # how many times one call launched it


class Kernels(TypedDict, total=False):
    """The kernels one profiled call of each side launched."""

    candidate: list[KernelLaunch]
    reference: list[KernelLaunch]


class Cost(TypedDict, total=False):
    """Where a verification's wall time went (seconds), for the verdict's `cost`."""

    steps_s: dict[str, float]  # per step: start_up, prepare, load, check, time, profile, shapes
    timing_s: dict[str, float]  # the timing step's parts, per measure (latency, steady_state, device_time)
    requests_s: dict[str, float]  # per process and request ("candidate call"); the steps overlap them
    device_wait_s: float  # waiting for the device lock
    sandbox_start_s: float  # starting the sandboxes
    baselines_built_s: dict[str, float]  # each baseline built in this run
    baselines_cached: list[str]  # baselines kept from an earlier run
    build_caches_removed: list[str]  # build caches removed: over their bound, or the least recently used
    rates_not_kept: str  # why the device's rates measured here were not kept
    total_s: float  # the whole verification


class Verdict(TypedDict, total=False):
    """One verdict of one candidate on one device: the schema the CLI, the worker, the API and the pages share."""

    harness_version: str  # HARNESS_VERSION of the harness that gave it
    status: str  # one of STATUSES
    reason: str  # why: the first failed check's name and detail, or what verified it
    checks: list[Check]  # every check that ran, in order
    correctness: Correctness  # how right it was
    timing: Timing  # how fast it was (absent without baselines)
    flags: list[str]  # notable findings that do not change the status (flags.py)
    flag_details: dict[str, str]  # each flag's detail, in words
    kernels: Kernels  # the kernels a profiled call launched
    static: dict[str, Any]  # what reading the candidate's source found (static_analysis)
    problem: dict[str, Any]  # the problem's inspection (degenerate, scale, FLOPs, bytes)
    env: dict[str, Any]  # the device and software (GPU, driver, CUDA, torch, triton, Python)
    sandbox: dict[str, Any]  # what confined the candidate's process, and its limits
    log_excerpt: str  # the end of the candidate's log
    # Where the verification's wall time went: seconds per step (start_up, prepare (which inspects
    # the problem beside it), load, check, time, profile, shapes), the time spent waiting for the
    # device lock, and the total.
    cost: Cost
