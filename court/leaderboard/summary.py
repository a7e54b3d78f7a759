"""The leaderboard's statistics, after CUDA-L1's table: per level and overall, for each baseline,
the mean, median, geometric mean, 25th/75th percentiles and max of the best kernels' speedups, with
how many problems have a verified kernel and how many of those beat the baseline beyond doubt; and
the distribution chart's counts.
"""

import math
import statistics
from dataclasses import dataclass, field

from court.leaderboard.query import SPEEDUP_COLUMNS, best_per_problem
from court.leaderboard.rows import BoardRow
from court.models import Problem


@dataclass
class Summary:
    level: int | str | None
    baseline: str
    problems: int
    verified: int
    beats: int = 0
    mean: float | None = None
    median: float | None = None
    geomean: float | None = None
    p25: float | None = None
    p75: float | None = None
    max: float | None = None
    speedups: list[float] = field(default_factory=list, repr=False)


def summarize(speedups: list[float], *, level, baseline: str, problems: int, beats: int = 0) -> Summary:
    """`beats`: how many of them are faster beyond doubt (Speedup.beats: the whole interval above 1.01)."""
    summary = Summary(level=level, baseline=baseline, problems=problems, verified=len(speedups), speedups=speedups, beats=beats)
    if speedups:
        ordered = sorted(speedups)
        summary.mean = statistics.fmean(ordered)
        summary.median = statistics.median(ordered)
        summary.geomean = math.exp(statistics.fmean(math.log(s) for s in ordered))
        if len(ordered) >= 2:
            summary.p25, _, summary.p75 = statistics.quantiles(ordered, n=4, method="inclusive")
        else:
            summary.p25 = summary.p75 = ordered[0]
        summary.max = ordered[-1]
    return summary


def summary_table(arch: str, *, rows: list[BoardRow] | None = None) -> list[Summary]:
    """Per level and overall, for each baseline: the statistics of the best kernels' speedups."""
    rows = [BoardRow.of(e) for e in best_per_problem(arch)] if rows is None else rows
    counted = [row for row in rows if row.counted]
    problem_counts: dict[int | str | None, int] = {}
    countable = Problem.objects.listed().exclude(degenerate=True, counts_in_statistics=False)
    for level in countable.values_list("level", flat=True):
        problem_counts[level] = problem_counts.get(level, 0) + 1
    levels = sorted({row.level for row in counted} | set(problem_counts), key=lambda level: (level is None, level))
    table: list[Summary] = []
    for baseline in SPEEDUP_COLUMNS:
        for level in levels + ["all"]:
            selected = counted if level == "all" else [r for r in counted if r.level == level]
            measured = [r for r in selected if r.values[baseline] is not None]
            problems = sum(problem_counts.values()) if level == "all" else problem_counts.get(level, 0)
            table.append(
                summarize(
                    [value for r in measured if (value := r.values[baseline]) is not None],
                    level=level,
                    baseline=baseline,
                    problems=problems,
                    beats=sum(1 for r in measured if r.beats(baseline)),
                )
            )
    return table


# Buckets of speedup over eager for the distribution chart, as (label, lower bound inclusive).
DISTRIBUTION_BUCKETS = (
    ("< 0.9x", 0.0),
    ("0.9-1.1x", 0.9),
    ("1.1-1.5x", 1.1),
    ("1.5-2x", 1.5),
    ("2-5x", 2.0),
    ("5-10x", 5.0),
    ("> 10x", 10.0),
)


def distribution(rows: list[BoardRow]) -> dict:
    """Counts of best kernels per speedup bucket and level: the chart's data, and its table."""
    levels = sorted({row.level for row in rows}, key=lambda level: (level is None, level))
    counts = {level: [0] * len(DISTRIBUTION_BUCKETS) for level in levels}
    for row in rows:
        eager = row.values["eager"]
        assert eager is not None  # best_per_problem leaves out evaluations without one
        index = max(i for i, (_, lower) in enumerate(DISTRIBUTION_BUCKETS) if eager >= lower)
        counts[row.level][index] += 1
    return {
        "buckets": [label for label, _ in DISTRIBUTION_BUCKETS],
        "series": [{"level": level, "counts": counts[level]} for level in levels],
    }
