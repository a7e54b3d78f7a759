"""Statistics of timing samples, computed by the parent from the times each call reported.

A measurement is a median with its interquartile range and sample count. Sampling stops once
the 95% confidence interval of every median (distribution-free, from order statistics) is within
the plan's target fraction of it. The times come from the call site's own pipe (callsite.c), which
no Python code of the candidate's process handles; the parent still holds every call to its own
clock: a call cannot have taken longer than the parent waited for it.
"""

import math
import random
from typing import NotRequired, TypedDict

from evaluation.harness.evidence import DeviceControl
from evaluation.harness.limits import INTERVAL_ROUNDS
from evaluation.harness.verdict import Measurement


def _quantile(ordered: list[float], q: float) -> float:
    if not ordered:
        return math.nan
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(samples: list[float]) -> Measurement:
    ordered = sorted(samples)
    return {
        "median_ms": _quantile(ordered, 0.5),
        "iqr_ms": _quantile(ordered, 0.75) - _quantile(ordered, 0.25),
        "samples": len(ordered),
    }


def median_interval(samples: list[float]) -> tuple[float, float]:
    """The 95% interval of the median, distribution-free: two order statistics around it."""
    n = len(samples)
    ordered = sorted(samples)
    spread = 0.98 * math.sqrt(n)
    low = max(0, math.floor(n / 2 - spread) - 1)
    high = min(n - 1, math.ceil(n / 2 + spread))
    return ordered[low], ordered[high]


def median_ci_fraction(samples: list[float]) -> float:
    """Half-width of the 95% interval of the median, as a fraction of the median."""
    if len(samples) < 6:
        return math.inf
    low, high = median_interval(samples)
    median = _quantile(sorted(samples), 0.5)
    return (high - low) / 2 / median if median > 0 else math.inf


def converged(samples_by_side: dict[str, list[float]], target: float, minimum: int) -> bool:
    return all(len(s) >= minimum and median_ci_fraction(s) <= target for s in samples_by_side.values())


def calls_exceeding_wall(calls: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """(reported, wall) pairs where the call claims more time than the parent waited for it."""
    return [(ms, wall) for ms, wall in calls if ms > wall * 1.01 + 0.05]


def _median(values: list[float]) -> float:
    return _quantile(sorted(values), 0.5)


def speedup(baseline: list[float], candidate: list[float]) -> float:
    """The baseline's median over the candidate's."""
    c = _median(candidate)
    return _median(baseline) / c if c > 0 else math.nan


def speedup_interval(
    baseline_rounds: dict[int, list[float]], candidate_rounds: dict[int, list[float]], *, resamples: int, seed: int = 0
) -> tuple[float, float] | None:
    """The 95% interval of `speedup`, by a paired bootstrap over rounds: each resample draws whole
    rounds with replacement, both sides' samples of a drawn round together, so what a round shared
    (the device's clock, another tenant) moves both sides of the ratio at once. Deterministic for
    given samples (the seed is not a secret: it only orders the resampling)."""
    rounds = sorted(set(baseline_rounds) & set(candidate_rounds))
    if len(rounds) < INTERVAL_ROUNDS:
        return None
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        drawn = [rounds[rng.randrange(len(rounds))] for _ in rounds]
        b = [x for r in drawn for x in baseline_rounds[r]]
        c = [x for r in drawn for x in candidate_rounds[r]]
        ratio = speedup(b, c)
        if math.isfinite(ratio):
            ratios.append(ratio)
    if len(ratios) < resamples // 2:
        return None
    ratios.sort()
    return _quantile(ratios, 0.025), _quantile(ratios, 0.975)


def interval_fraction(interval: tuple[float, float] | None, estimate: float) -> float:
    """Half the interval's width as a fraction of the estimate (inf without an interval)."""
    if interval is None or not estimate or not math.isfinite(estimate):
        return math.inf
    return (interval[1] - interval[0]) / 2 / estimate


# Two-sided 95%.
Z95 = 1.959964
# A/A controls (of distinct problems) a device needs before its between-process spread is stated.
MIN_CONTROLS = 3
# The median of a squared standard normal: the median of squares, divided by it, estimates the
# variance robustly (one wild control does not set a device's spread).
MEDIAN_CHI2_1 = 0.454936


# A/A controls of calls shorter than this (ms, the control's median) measure short calls' spread, which is
# mostly a time, not a share: on an H100 a 32x48x24 product (11 us a call) read 0.93-1.10 against itself
# in five pairs of processes, each read to about 1% in its rounds, while a 2048^3 one (340 us) read
# 1.000 +- 0.002 in four (benchmarks/RESULTS.md, harness 13). Controls of long calls alone say nothing
# of a short call's spread.
SHORT_CALL_MS = 0.2


class BetweenProcess(TypedDict):
    """A device's spread between pairs of processes, from its A/A controls (`between_process`)."""

    controls: int  # how many controls it has
    short_controls: int  # of those, controls of calls under SHORT_CALL_MS
    relative: float | None  # the part proportional to the call (sd of a log speedup)
    absolute_ms: float | None  # the fixed time


class Spread(TypedDict):
    """The spread between processes for calls of one length (`spread_at`)."""

    spread: float | None  # the sd of a log speedup; None without controls of long calls
    at_ms: float | None  # the call's length it is for
    why: NotRequired[str]  # what the device lacks, where it lacks controls


def between_process(controls: list[DeviceControl]) -> BetweenProcess:
    """How far a speedup read in one pair of processes can lie from one read in another pair, on this
    device, from its A/A controls: each control (`log_ratio`, `within`: ln of the reference timed against
    itself in two processes, and that reading's own standard error from its rounds; `call_ms`: its
    median call) reads 0 but for what differs between processes (allocator, clocks, placement) and its
    rounds' noise. That spread has a part proportional to the call (`relative`: the standard deviation
    of a log speedup beyond the rounds' noise, from controls of calls of SHORT_CALL_MS or more, or of
    unknown length) and a fixed time (`absolute_ms`, from controls of shorter calls, each scaled by its
    call), which dominates short calls: `spread_at` combines them for a call's length. A bias of the two
    kinds of process counts in both, as the controls are squared around 0, not around their mean."""
    long = [c for c in controls if (c.get("call_ms") or math.inf) >= SHORT_CALL_MS]
    # Each short control with its call's length (set, and under SHORT_CALL_MS).
    short = [(c, ms) for c in controls if (ms := c.get("call_ms") or math.inf) < SHORT_CALL_MS]
    found: BetweenProcess = {"controls": len(controls), "short_controls": len(short), "relative": None, "absolute_ms": None}
    if len(long) >= MIN_CONTROLS:
        found["relative"] = _robust_sd([c["log_ratio"] for c in long], [c["within"] for c in long])
    if len(short) >= MIN_CONTROLS:
        found["absolute_ms"] = _robust_sd([c["log_ratio"] * ms for c, ms in short], [c["within"] * ms for c, ms in short])
    return found


def _robust_sd(readings: list[float], own_errors: list[float]) -> float:
    """The standard deviation of readings around 0 beyond their own errors, from medians of squares (one
    wild control does not set a device's spread)."""
    total = _quantile(sorted(r**2 for r in readings), 0.5) / MEDIAN_CHI2_1
    return math.sqrt(max(0.0, total - _quantile(sorted(e**2 for e in own_errors), 0.5)))


def spread_at(found: BetweenProcess, call_ms: float | None) -> Spread:
    """The spread between processes (sd of a log speedup) for calls of `call_ms`, the shorter side of a
    ratio: the relative part, and the absolute part over the call. A longer call needs controls of long
    calls; a short one counts what the device has (the long calls' part alone where it lacks controls of
    short calls, which `why` then says). Without controls of long calls it is None."""
    relative, absolute = found.get("relative"), found.get("absolute_ms")
    short = call_ms is not None and call_ms < SHORT_CALL_MS
    lacking = f"fewer than {MIN_CONTROLS} A/A controls of calls under {SHORT_CALL_MS * 1e3:.0f} us on this device"
    if relative is None and not (short and absolute is not None):
        why = lacking if short else f"fewer than {MIN_CONTROLS} A/A controls on this device"
        return {"spread": None, "at_ms": call_ms, "why": why}
    part = absolute / call_ms if absolute is not None and call_ms else 0.0
    spread: Spread = {"spread": math.sqrt((relative or 0.0) ** 2 + part**2), "at_ms": call_ms}
    if short and absolute is None:
        spread["why"] = f"{lacking}: only the longer calls' spread is counted"
    return spread


def reproduction_interval(speedup: float, interval: tuple[float, float] | None, spread: float | None) -> list[float] | None:
    """Where a second verification in fresh processes reads this speedup, 95% of the time: each side of
    the rounds' interval, in logs, taken as one reading's standard error (se), and a second reading
    differs from this one by se and spread twice over: ln s ± 1.96·√(2·(se² + spread²)). Without a
    measured spread, the rounds' noise alone (√2 of the rounds' interval), which a device's spread
    then widens."""
    if interval is None or not speedup or speedup <= 0 or min(interval) <= 0:
        return None
    centre, extra = math.log(speedup), (spread or 0.0) ** 2
    low_se = max(0.0, centre - math.log(interval[0])) / Z95
    high_se = max(0.0, math.log(interval[1]) - centre) / Z95
    return [
        math.exp(centre - Z95 * math.sqrt(2 * (low_se**2 + extra))),
        math.exp(centre + Z95 * math.sqrt(2 * (high_se**2 + extra))),
    ]
