"""The leaderboard: the best verified kernel per problem and architecture, and its statistics.

Only evaluations of the current harness version count, only listed or featured kernels, and
only problems that are listed and not degenerate. The summary follows CUDA-L1's table: per
level, mean, median, geometric mean, 25th/75th percentiles and max of the speedups, with how
many problems have a verified kernel and how many of those beat the baseline by more than 1%.
"""

import math
import statistics
from dataclasses import dataclass, field

from django.db.models import QuerySet

from kernels.models import Evaluation, Problem
from kernels.models.internal_details import public_env

SPEEDUP_COLUMNS = {
    "eager": "speedup_eager",
    "compile": "speedup_compile",
    "compile-ro": "speedup_compile_ro",
    "cudagraph": "speedup_cudagraph",
}
# A kernel "beats" a baseline when the whole 95% interval of its speedup is above 1.01
# (Evaluation.beats); a speedup within noise of 1 is no win.


def leaderboard_evaluations(arch: str | None = None) -> QuerySet[Evaluation]:
    """Everything the leaderboard may show, on one architecture or any."""
    evaluations = Evaluation.objects.current().verified().listed().select_related("candidate__problem", "release")
    return evaluations if arch is None else evaluations.filter(arch=arch)


def best_per_problem(arch: str) -> list[Evaluation]:
    """One row per problem: its fastest verified kernel against eager on this architecture."""
    best: dict[int, Evaluation] = {}
    for evaluation in leaderboard_evaluations(arch).exclude(speedup_eager=None):
        problem_id = evaluation.candidate.problem_id
        if problem_id not in best or evaluation.speedup_eager > best[problem_id].speedup_eager:
            best[problem_id] = evaluation
    return sorted(best.values(), key=lambda e: (e.candidate.problem.level or 99, e.candidate.problem.task or 0, e.pk))


def in_statistics(problem: Problem) -> bool:
    """Degenerate problems stay out of the statistics unless staff count them in."""
    return problem.degenerate is not True or problem.counts_in_statistics


@dataclass
class Summary:
    level: int | None
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
    """`beats`: how many of them are faster beyond doubt (Evaluation.beats: the whole interval above 1.01)."""
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


def summary_table(arch: str, *, rows: list[Evaluation] | None = None) -> list[Summary]:
    """Per level and overall, for each baseline: the statistics of the best kernels' speedups."""
    rows = best_per_problem(arch) if rows is None else rows
    counted = [row for row in rows if in_statistics(row.candidate.problem)]
    problem_counts = {}
    countable = Problem.objects.listed().exclude(degenerate=True, counts_in_statistics=False)
    for level in countable.values_list("level", flat=True):
        problem_counts[level] = problem_counts.get(level, 0) + 1
    levels = sorted(
        {row.candidate.problem.level for row in counted} | set(problem_counts), key=lambda level: (level is None, level)
    )
    table = []
    for baseline, column in SPEEDUP_COLUMNS.items():
        for level in levels + ["all"]:
            selected = counted if level == "all" else [r for r in counted if r.candidate.problem.level == level]
            measured = [r for r in selected if getattr(r, column) is not None]
            problems = sum(problem_counts.values()) if level == "all" else problem_counts.get(level, 0)
            table.append(
                summarize(
                    [getattr(r, column) for r in measured],
                    level=level,
                    baseline=baseline,
                    problems=problems,
                    beats=sum(1 for r in measured if r.beats(baseline)),
                )
            )
    return table


def arch_exists(arch: str) -> bool:
    """An architecture some worker has evaluated on: its board may be empty, but it is coming. Any
    other name has no board (pages, API, export and socket answer 404)."""
    return Evaluation.objects.filter(arch=arch).exists()


def leaderboard_archs() -> list[str]:
    """Architectures with something to show: a delisted or hidden kernel opens no tab."""
    return sorted(set(leaderboard_evaluations().values_list("arch", flat=True)))


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


def distribution(rows: list[Evaluation]) -> dict:
    """Counts of best kernels per speedup bucket and level: the chart's data, and its table."""
    levels = sorted({row.candidate.problem.level for row in rows}, key=lambda level: (level is None, level))
    counts = {level: [0] * len(DISTRIBUTION_BUCKETS) for level in levels}
    for row in rows:
        index = max(i for i, (_, lower) in enumerate(DISTRIBUTION_BUCKETS) if row.speedup_eager >= lower)
        counts[row.candidate.problem.level][index] += 1
    return {
        "buckets": [label for label, _ in DISTRIBUTION_BUCKETS],
        "series": [{"level": level, "counts": counts[level]} for level in levels],
    }


def export_lines(arch: str, *, site_url: str = "") -> list[dict]:
    """The leaderboard as CUDA-L1's release shape: one line per listed problem, plus our fields.

    `score_*` are our measured speedups (where CUDA-L1 published theirs); `custom_code` is null
    where no kernel is verified here. Everything we measured besides is under `measured`, with the
    environment's public part only: the file is made to be passed on.
    """
    best = {row.candidate.problem_id: row for row in best_per_problem(arch)}
    lines = []
    for problem in Problem.objects.listed().order_by("level", "task", "id"):
        row = best.get(problem.pk)
        line = {
            "level_id": problem.level,
            "task_id": problem.task,
            "ref_code": problem.source,
            "custom_code": row.candidate.code if row else None,
            "score_default": row.speedup_eager if row else None,
            "score_torch_compile_default": row.speedup_compile if row else None,
            "score_torch_compile_reduce_overhead": row.speedup_compile_ro if row else None,
            "score_cuda_graph": row.speedup_cudagraph if row else None,
            "score_cudnn": None,
        }
        if row:
            line["measured"] = {
                "arch": arch,
                "problem_id": problem.pk,
                "kernel_id": row.candidate_id,
                "evaluation_id": row.pk,
                "harness_version": row.harness_version,
                "language": row.candidate.language,
                "origin": row.candidate.origin_label or row.candidate.origin,
                "precision_tier": row.precision_tier,
                "flags": row.flags,
                "candidate_ms": row.candidate_ms,
                "max_rel_error": row.max_rel_error,
                "env": public_env(row.env),
                "degenerate_problem": bool(problem.degenerate),
                "url": f"{site_url}{row.candidate.get_absolute_url()}",
            }
        lines.append(line)
    return lines
