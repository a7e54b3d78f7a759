"""Statistics of timing samples, computed by the parent from the times each call reported.

A measurement is a median with its interquartile range and sample count. Sampling stops once
the 95% confidence interval of every median (distribution-free, from order statistics) is within
the plan's target fraction of it. The parent also holds every call to its own clock, which no
candidate code can reach: a call cannot have taken longer than the parent waited for it, and the
time a candidate saves over a baseline must show on the parent's clock too.
"""

import math
import statistics


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


# Fewer rounds than this say nothing about the parent's clock either way.
MIN_CLOCK_ROUNDS = 10


def unexplained_saving(candidate: list[tuple[float, float]], baseline: list[tuple[float, float]]) -> str | None:
    """Whether the candidate's reported times hide time that the parent's clock saw, from the
    (reported, wall) pairs of timed calls, the i-th of each side from the same shuffled round.

    The parent waits longer than a call reports by the harness's bookkeeping around it (inputs,
    poison, facts, snapshots, the channel), alike for both sides. A candidate that reports less
    than it took leaves the rest in that wait: per round, the candidate's wait beyond its report
    minus the baseline's is time hidden from the timer. A busy host stretches the bookkeeping and
    scheduler noise shifts single calls by milliseconds, so only a large, consistent discrepancy
    counts: the lower end of the 95% interval of the median over rounds must exceed both half the
    claimed saving and the harness's own overhead per call (the baseline's median wait beyond its
    report). Savings smaller than that overhead cannot be told from noise by this clock."""
    rounds = list(zip(candidate, baseline))
    if len(rounds) < MIN_CLOCK_ROUNDS:
        return None
    claimed = statistics.median(ms for ms, _ in baseline) - statistics.median(ms for ms, _ in candidate)
    if claimed <= 0:
        return None
    hidden = [(c_wall - c_ms) - (b_wall - b_ms) for (c_ms, c_wall), (b_ms, b_wall) in rounds]
    overhead = statistics.median(wall - ms for ms, wall in baseline)
    consistent, _ = median_interval(hidden)
    if consistent > max(0.5 * claimed, overhead):
        return (f"the reported times say the candidate saves {claimed:.3f} ms per call over the baseline, but the "
                f"harness's own clock waited {statistics.median(hidden):.3f} ms longer per call for the candidate than "
                f"its reports explain (the harness's own overhead is {overhead:.3f} ms per call)")
    return None
