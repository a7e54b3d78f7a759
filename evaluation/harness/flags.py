"""The flags: notable findings that do not change a verdict's status, each a small function of the
evidence returning its explanation, or None. Read FLAGS to see them all; DEVELOPERS.md's table says
what each means for a reader of the leaderboard.

Checks (checks.py) decide the status first; the flags are computed for every verdict after them.
"""

import math
import statistics
from typing import Any

from evaluation.harness import checks, measurement, speed_of_light, tolerance
from evaluation.harness.checks import hidden_work, lowers_precision, state_changes
from evaluation.harness.evidence import CANDIDATE, CONTROL, DEVICE, PROFILE, STEADY, TIMED, TRIAL, WARMUP, Evidence
from evaluation.harness.verdict import BEATS


def degenerate_problem(evidence: Evidence) -> str | None:
    problem = evidence.problem or {}
    return f"the problem is degenerate: {problem['reason']}" if problem.get("degenerate") else None


def tiny_outputs(evidence: Evidence) -> str | None:
    scale = (evidence.problem or {}).get("output_scale")
    if scale is not None and scale < 1e-2:
        return (
            f"the reference's outputs have a root mean square of {scale:.3g}, below the absolute tolerance (1e-2) "
            "other harnesses use"
        )
    return None


def float32_reference_inexact(evidence: Evidence) -> str | None:
    held = [c for c in evidence.candidate_calls() if c.comparison is not None and c.comparison.get("against") == "float32"]
    if not held:
        return None
    error = reference_float32_error(evidence)
    return (
        f"the problem's own float32 output differs from float64 by a relative error of {error:.3g} (outputs "
        f"that underflow float32, or a long recurrence), beyond any tolerance: {len(held)} checked calls were "
        f"held to the float32 eager output instead, at the base tolerance"
    )


def nondeterministic_problem(evidence: Evidence) -> str | None:
    return (
        "the reference gives different outputs for the same inputs and seed"
        if (evidence.problem or {}).get("nondeterministic")
        else None
    )


def stateful_problem(evidence: Evidence) -> str | None:
    if not (evidence.problem or {}).get("carries_state"):
        return None
    return "the same inputs twice gave different outputs: the problem's forward carries state from one call to the next"


def _worst_error(evidence: Evidence) -> float | None:
    compared = [
        c.comparison.get("max_rel_error")
        for c in evidence.candidate_calls(TRIAL, TIMED, STEADY, DEVICE, WARMUP, PROFILE)
        # a graph's replays show whether the graph is the call, not precision
        if c.comparison is not None and not c.replay
    ]
    errors: list[float] = [e for e in compared if e is not None]
    return max(errors) if errors else None


def reference_float32_error(evidence: Evidence) -> float | None:
    reported = [
        (c.reference or {}).get("float32_error", {}).get("max_rel_error") for c in evidence.candidate_calls() if c.reference
    ]
    errors: list[float] = [e for e in reported if e is not None]
    problem_error: float | None = (evidence.problem or {}).get("float32_error", {}).get("max_rel_error")
    return max(errors) if errors else problem_error


def reduced_precision(evidence: Evidence) -> str | None:
    reasons = []
    worst, reference = _worst_error(evidence), reference_float32_error(evidence)
    if worst is not None and tolerance.tier_rank(tolerance.tier(worst)) > tolerance.tier_rank(tolerance.tier(reference)):
        reasons.append(
            f"its outputs are {tolerance.tier(worst)} (relative error {worst:.2g}) where float32 eager is "
            f"{tolerance.tier(reference)}"
        )
    switched = lowers_precision(state_changes(evidence))
    if switched:
        reasons.append(f"it switches on {', '.join(switched)}")
    return "the candidate lowers precision: " + "; ".join(reasons) if reasons else None


def global_state_changed(evidence: Evidence) -> str | None:
    changes = state_changes(evidence)
    if not changes:
        return None
    listed = ", ".join(f"{name} {c['before']!r} -> {c['after']!r}" for name, c in sorted(changes.items()))
    return f"the candidate changes global state ({listed}); kept to its own calls, baselines ran with the original state"


def _launched(reply: dict[str, Any]) -> tuple[list[str], list[str]]:
    return sorted(map(str, reply["kernels"])), sorted(map(str, reply.get("work") or []))


def same_kernels_as_reference(evidence: Evidence) -> str | None:
    """The candidate's profiled call launched the reference's kernels, as many of each, and did the
    same work: the same operators on the same shapes (profiling.kernels_of; names alone matched a
    reassociated product 13x faster)."""
    profiled = [c for c in evidence.calls if c.phase == PROFILE and c.reply.get("kernels") is not None]
    candidate = next((_launched(c.reply) for c in profiled if c.who == CANDIDATE), None)
    reference = next((_launched(c.reply) for c in profiled if c.who != CANDIDATE), None)
    if candidate and reference and candidate[0] and candidate == reference:
        facts = evidence.static.get("facts", {})
        if "custom_cuda" in facts or "triton" in facts:
            return "the candidate launched exactly the reference's kernels: its custom kernel never ran"
        return (
            "the candidate launched exactly the reference's kernels and has none of its own: a speedup can only "
            "come from launching them differently (a CUDA graph, fewer synchronizations)"
        )
    return None


def median_ms(evidence: Evidence, who: str = CANDIDATE) -> float | None:
    """One side's latency median (one call at a time on an idle device)."""
    samples = evidence.timed_samples(who)
    return measurement.summarize(samples)["median_ms"] if samples else None


def steady_ms(evidence: Evidence, who: str = CANDIDATE) -> float | None:
    """One side's steady-state median (calls back to back; the candidate's charged with the work it left,
    checks.leftover_counted_ms), else its latency median."""
    rounds = checks.charged_rounds(evidence, who) if who == CANDIDATE else evidence.steady_rounds(who)
    samples = [x for xs in rounds.values() for x in xs]
    return measurement.summarize(samples)["median_ms"] if samples else median_ms(evidence, who)


def sol_floor(evidence: Evidence) -> dict[str, Any] | None:
    problem = evidence.problem or {}
    if problem.get("flops") is None:
        return None
    return speed_of_light.floor_ms(problem["flops"], problem.get("bytes", 0), evidence.rates)


def beyond_speed_of_light(evidence: Evidence) -> str | None:
    floor, median = sol_floor(evidence), steady_ms(evidence)
    if floor is not None and speed_of_light.beyond(median, floor):
        return (
            f"the candidate's {median:.4g} ms is under the speed-of-light floor of {floor['floor_ms']:.4g} ms "
            f"({floor['bound']}-bound: {floor['flops']:.3g} FLOPs, {floor['bytes']:.3g} bytes)"
        )
    return None


# A side whose host spends at least this share of its median sample inside the call: the GPU waits on
# the host for much of the interval. On an H200 host, CUDA-L1's L1 T1 candidate (four launches from
# Python, ~0.08 ms of GPU work) spent 0.16-0.19 ms of its 0.21-0.26 ms samples issuing them, and its
# median moved 22% between processes; in GPU time alone, 3.4% (benchmarks/RESULTS.md).
HOST_BOUND_SHARE = 0.5


def host_bound(evidence: Evidence) -> str | None:
    sides = []
    for who in (CANDIDATE, *evidence.baselines):
        host, median = evidence.host_ms(who), median_ms(evidence, who)
        if host is not None and median and host >= HOST_BOUND_SHARE * median:
            sides.append(f"{who} {host:.3g} ms of its {median:.3g} ms")
    if not sides:
        return None
    return f"the host was busy inside the call for most of the sample ({'; '.join(sides)})"


def aa_control(evidence: Evidence, resamples: int = 1000) -> dict[str, Any] | None:
    """The A/A control (pipeline, CONTROL): the reference timed in a process of the candidate's shape
    against eager in the baseline process, in the same rounds. Both run the same code, so the ratio is
    1.0 unless this host times the two kinds of process unalike; `off` where its 95% interval lies
    wholly beyond the band a win must clear (verdict.BEATS either way)."""
    # Each charged for the work it left on the device, as the headline charges the candidate (scoring._bursts).
    control, eager = checks.charged_rounds(evidence, CONTROL), evidence.steady_rounds("eager")
    if not control or not eager:
        return None
    control_samples = [x for r in control.values() for x in r]
    eager_samples = [x for r in eager.values() for x in r]
    interval = measurement.speedup_interval(eager, control, resamples=resamples)
    candidate = checks.charged_rounds(evidence, CANDIDATE)
    over_control = measurement.speedup_interval(control, candidate, resamples=resamples) if candidate else None
    return {
        "what": (
            "the reference run as a candidate is, timed against eager in the same rounds: 1.0 where this host times both alike"
        ),
        "speedup": measurement.speedup(eager_samples, control_samples),
        # The control's median call: its spread between processes belongs to calls of this length.
        "call_ms": statistics.median(control_samples),
        "interval": list(interval) if interval else None,
        "off": bool(interval and (interval[0] > BEATS or interval[1] < 1 / BEATS)),
        "candidate_speedup": measurement.speedup(control_samples, [x for r in candidate.values() for x in r])
        if candidate
        else None,
        "candidate_interval": list(over_control) if over_control else None,
    }


def device_control_off(evidence: Evidence, control: dict[str, Any] | None) -> bool:
    """This device's last A/A control (of another verification) read off 1.0, and this verification ran
    none of its own that could show it reads 1.0 again: until one does, no speedup on it is a win."""
    return control is None and bool(evidence.device_controls) and bool(evidence.device_controls[-1]["off"])


def control_off(evidence: Evidence, control: dict[str, Any] | None) -> str | None:
    """`control`: this verification's A/A control (aa_control), as the verdict's speedups read it."""
    if device_control_off(evidence, control):
        last = evidence.device_controls[-1]
        return (
            f"this device's last A/A control read {math.exp(last['log_ratio']):.2f}x for the reference against itself, "
            "off 1.0 beyond its interval, and this verification ran none: until one reads 1.0 again, no speedup "
            "on this device is a win"
        )
    if not control or not control["off"]:
        return None
    low, high = control["interval"]
    return (
        f"the reference timed as a candidate is read {control['speedup']:.2f}x against itself (95% interval {low:.2f}-{high:.2f})"
    )


def shape_specialized(evidence: Evidence) -> str | None:
    variant = evidence.variant
    return (
        f"right at the published sizes only: {variant['detail']}"
        if variant is not None and variant.get("status") == "failed"
        else None
    )


def clock_unbounded(evidence: Evidence) -> str | None:
    bound = checks.clock_bound(evidence)
    if bound is None or bound["noise"] <= bound["allowed"]:
        return None
    return (
        f"the host's noise ({bound['noise']:.1f} ms per call across the A/A control's bursts) is beyond what the "
        f"harness's own clock can bound the candidate's {bound['typical']:.3f} ms calls by from below "
        f"({bound['allowed']:.1f} ms)"
    )


FLAGS = [
    ("hidden_work", hidden_work),
    ("degenerate_problem", degenerate_problem),
    ("tiny_outputs", tiny_outputs),
    ("float32_reference_inexact", float32_reference_inexact),
    ("nondeterministic_problem", nondeterministic_problem),
    ("stateful_problem", stateful_problem),
    ("reduced_precision", reduced_precision),
    ("global_state_changed", global_state_changed),
    ("same_kernels_as_reference", same_kernels_as_reference),
    ("beyond_speed_of_light", beyond_speed_of_light),
    ("shape_specialized", shape_specialized),
    ("host_bound", host_bound),
    ("clock_unbounded", clock_unbounded),
]


def run_flags(evidence: Evidence, control: dict[str, Any] | None) -> dict[str, str]:
    """The flags raised, by name. `control`: the verdict's A/A control (aa_control)."""
    found = [(name, finding(evidence)) for name, finding in FLAGS] + [("control_off", control_off(evidence, control))]
    return {name: detail for name, detail in found if detail}
