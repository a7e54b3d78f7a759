"""Statistics of timing samples, computed by the parent from the times each call reported.

A measurement is a median with its interquartile range and sample count. Sampling stops once
the 95% confidence interval of every median (distribution-free, from order statistics) is within
the plan's target fraction of it. The times come from the call site's own pipe (callsite.c), which
no Python code of the candidate's process handles; the parent still holds every call to its own
clock: a call cannot have taken longer than the parent waited for it.
"""

import math
import random


def _quantile(ordered: list[float], q: float) -> float:
    if not ordered:
        return math.nan
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(samples: list[float]) -> dict:
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
    if len(rounds) < 3:
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


def between_process(controls: list[dict]) -> dict:
    """How far a speedup read in one pair of processes can lie from one read in another pair, on this
    device, from its A/A controls: each control (`log_ratio`, `within`: ln of the reference timed against
    itself in two processes, and that reading's own standard error from its rounds) reads 0 but for
    what differs between processes (allocator, clocks, placement) and its rounds' noise. `spread` is the
    standard deviation of a log speedup between process pairs beyond the rounds' noise; a bias of the
    two kinds of process counts in it, as the controls are squared around 0, not around their mean."""
    if len(controls) < MIN_CONTROLS:
        return {"spread": None, "controls": len(controls), "why": f"fewer than {MIN_CONTROLS} A/A controls on this device"}
    squares = sorted(c["log_ratio"] ** 2 for c in controls)
    own = sorted(c["within"] ** 2 for c in controls)
    total = _quantile(squares, 0.5) / MEDIAN_CHI2_1
    return {"spread": math.sqrt(max(0.0, total - _quantile(own, 0.5))), "controls": len(controls)}


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
