"""The leaderboard: the best verified kernel per problem and architecture, and its statistics.

Only evaluations of the current harness version count, only listed or featured kernels, and
only problems that are listed and not degenerate. The summary follows CUDA-L1's table: per
level, mean, median, geometric mean, 25th/75th percentiles and max of the speedups, with how
many problems have a verified kernel and how many of those beat the baseline beyond doubt.

It is computed once per change, not per request: what the pages, the API and the export read is a
snapshot in the database (court.models.leaderboard) under the leaderboard's current version, and
every owner of a change the leaderboard may show calls `changed()`, which gives it a new version
in the same transaction: the change and the new version commit together. The snapshots live in
the database, not the cache, so a Redis outage costs nothing here. A snapshot older than MAX_AGE
is computed again, so a write that bypasses the owners (a shell, raw SQL) shows within that time.
"""

import json
import logging
import math
import statistics
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from django.core.serializers.json import DjangoJSONEncoder
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import F, QuerySet, Window
from django.db.models.functions import RowNumber
from django.urls import reverse
from django.utils import timezone

from court.models import Candidate, Curation, Evaluation, LeaderboardSnapshot, LeaderboardVersion, Problem
from court.models.evaluations import SHOWN_BASELINES, Speedup
from court.models.internal_details import public_env
from evaluation.harness.static_analysis import KINDS

logger = logging.getLogger(__name__)
T = TypeVar("T")

SPEEDUP_COLUMNS = Evaluation.SPEEDUP_FIELDS
# A kernel "beats" a baseline when the whole 95% interval of its speedup is above 1.01
# (court.models.evaluations.Speedup); a speedup within noise of 1 is no win.

# The backstop for writes made around the owners of changes (`changed`).
MAX_AGE = timedelta(minutes=10)


# Bumped with the shape of a snapshot's body (BoardRow's fields): a snapshot an older release of the
# code kept is never parsed as this one.
SHAPE = 3


def leaderboard_evaluations(arch: str | None = None) -> QuerySet[Evaluation]:
    """Everything the leaderboard may show, on one architecture or any."""
    evaluations = Evaluation.objects.current().verified().listed().select_related("candidate__problem", "release")
    return evaluations if arch is None else evaluations.filter(arch=arch)


def best_per_problem(arch: str) -> list[Evaluation]:
    """One row per problem: its fastest verified kernel against eager on this architecture (on a
    tie, the evaluation made first). Chosen by the database, so only the winners are loaded."""
    ranked = (
        leaderboard_evaluations(arch)
        .exclude(speedup_eager=None)
        .annotate(
            place=Window(
                RowNumber(), partition_by=[F("candidate__problem_id")], order_by=[F("speedup_eager").desc(), F("pk").asc()]
            )
        )
    )
    best = ranked.filter(place=1).defer("candidate__code", "candidate__problem__source", "log_excerpt", "error_detail")
    return sorted(best, key=lambda e: (e.candidate.problem.level or 99, e.candidate.problem.task or 0, e.pk))


def in_statistics(problem: Problem) -> bool:
    """Degenerate problems stay out of the statistics unless staff count them in."""
    return problem.degenerate is not True or problem.counts_in_statistics


@dataclass
class BoardRow:
    """One problem's best kernel, as the pages, the API and the statistics read it."""

    problem: int
    label: str
    title: str
    level: int | None
    task: int | None
    degenerate: bool | None
    counted: bool  # in the statistics (in_statistics)
    kernel: int
    evaluation: int
    curation: str
    origin: str
    origin_label: str
    language: str
    kind: str  # of optimization (Candidate.kind)
    precision_tier: str
    flags: list[str]
    candidate_ms: float | None
    finished_at: str | None
    values: dict[str, float | None]  # by baseline, as the harness names them
    intervals: dict[str, list | None]
    release: str  # the measured release the verdict was imported from, or "" for a live worker's

    @classmethod
    def of(cls, evaluation: Evaluation) -> "BoardRow":
        candidate, problem = evaluation.candidate, evaluation.candidate.problem
        return cls(
            problem=problem.pk,
            label=problem.label,
            title=problem.title,
            level=problem.level,
            task=problem.task,
            degenerate=problem.degenerate,
            counted=in_statistics(problem),
            kernel=candidate.pk,
            evaluation=evaluation.pk,
            curation=candidate.curation,
            origin=candidate.origin,
            origin_label=candidate.origin_label,
            language=candidate.language,
            kind=candidate.kind,
            precision_tier=evaluation.precision_tier,
            flags=list(evaluation.flags or []),
            candidate_ms=evaluation.candidate_ms,
            finished_at=evaluation.finished_at.isoformat() if evaluation.finished_at else None,
            values={baseline: getattr(evaluation, column) for baseline, column in SPEEDUP_COLUMNS.items()},
            intervals={baseline: evaluation.speedup_interval(baseline) for baseline in SPEEDUP_COLUMNS},
            release=evaluation.release.name if evaluation.release_id else "",
        )

    def speedup(self, baseline: str = "eager") -> Speedup:
        return Speedup(self.values.get(baseline), self.intervals.get(baseline))

    @property
    def speedups(self) -> dict[str, Speedup]:
        return {name: self.speedup(baseline) for name, baseline in SHOWN_BASELINES.items()}

    def beats(self, baseline: str = "eager") -> bool:
        return self.speedup(baseline).beats

    @property
    def featured(self) -> bool:
        return self.curation == Curation.FEATURED

    @property
    def kind_label(self) -> str:
        return KINDS.get(self.kind, "")

    @property
    def origin_shown(self) -> str:
        return self.origin_label or Candidate.Origin(self.origin).label

    @property
    def problem_url(self) -> str:
        return reverse("kernels:problem", args=[self.problem])

    @property
    def kernel_url(self) -> str:
        return reverse("kernels:candidate", args=[self.kernel])

    @property
    def finished(self):
        return datetime.fromisoformat(self.finished_at) if self.finished_at else None


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
    problem_counts = {}
    countable = Problem.objects.listed().exclude(degenerate=True, counts_in_statistics=False)
    for level in countable.values_list("level", flat=True):
        problem_counts[level] = problem_counts.get(level, 0) + 1
    levels = sorted({row.level for row in counted} | set(problem_counts), key=lambda level: (level is None, level))
    table = []
    for baseline in SPEEDUP_COLUMNS:
        for level in levels + ["all"]:
            selected = counted if level == "all" else [r for r in counted if r.level == level]
            measured = [r for r in selected if r.values[baseline] is not None]
            problems = sum(problem_counts.values()) if level == "all" else problem_counts.get(level, 0)
            table.append(
                summarize(
                    [r.values[baseline] for r in measured],
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
        index = max(i for i, (_, lower) in enumerate(DISTRIBUTION_BUCKETS) if row.values["eager"] >= lower)
        counts[row.level][index] += 1
    return {
        "buckets": [label for label, _ in DISTRIBUTION_BUCKETS],
        "series": [{"level": level, "counts": counts[level]} for level in levels],
    }


@dataclass
class Board:
    """One architecture's leaderboard: its rows in problem order, its statistics and its chart."""

    arch: str
    rows: list[BoardRow]
    summary: list[Summary]
    chart: dict
    derived: dict = field(default_factory=dict, repr=False, compare=False)

    def kept(self, name: str, make: Callable[[], T]) -> T:
        """What a reader derives from this board (the API's representation), made once: a board
        is read again by this process until the leaderboard changes."""
        if name not in self.derived:
            self.derived[name] = make()
        return self.derived[name]

    def to_json(self) -> str:
        summary = [{**asdict(s), "speedups": []} for s in self.summary]
        return json.dumps({"arch": self.arch, "rows": [asdict(r) for r in self.rows], "summary": summary, "chart": self.chart})

    @classmethod
    def from_json(cls, body: str) -> "Board":
        data = json.loads(body)
        return cls(
            arch=data["arch"],
            rows=[BoardRow(**row) for row in data["rows"]],
            summary=[Summary(**s) for s in data["summary"]],
            chart=data["chart"],
        )


def compute_board(arch: str) -> Board:
    rows = [BoardRow.of(evaluation) for evaluation in best_per_problem(arch)]
    return Board(arch=arch, rows=rows, summary=summary_table(arch, rows=rows), chart=distribution(rows))


def leaderboard_archs() -> list[str]:
    """Architectures with something to show: a delisted or hidden kernel opens no tab."""
    return _snapshot("archs", lambda: json.dumps(computed_archs()), json.loads)


def computed_archs() -> list[str]:
    return sorted(set(leaderboard_evaluations().order_by().values_list("arch", flat=True).distinct()))


def board(arch: str) -> Board:
    """The leaderboard of one architecture, as of the last change."""
    return _snapshot(f"board:{arch}", lambda: compute_board(arch).to_json(), Board.from_json)


def problem_order(row: BoardRow) -> tuple:
    """Rows in the order of their problems: by level, then task (the leaderboard's default sort)."""
    return (row.level or 99, row.task or 0, row.problem)


@dataclass
class ComparedRow:
    """One problem's best kernel on each of two architectures (None where it has none there)."""

    first: BoardRow | None
    second: BoardRow | None

    @property
    def problem(self) -> BoardRow:
        """The row whose problem fields (label, title, level, url) the page shows."""
        return self.first or self.second

    @property
    def sides(self) -> tuple[BoardRow | None, BoardRow | None]:
        return self.first, self.second

    @property
    def same_kernel(self) -> bool:
        return bool(self.first and self.second and self.first.kernel == self.second.kernel)

    @property
    def time_ratio(self) -> float | None:
        """The second architecture's best kernel's time over the first's: below 1, the problem runs
        faster there (each side's own best kernel, each timed on its own GPU)."""
        if self.first and self.second and self.first.candidate_ms and self.second.candidate_ms:
            return self.second.candidate_ms / self.first.candidate_ms
        return None


@dataclass
class Comparison:
    """Two architectures' leaderboards side by side, problem by problem, and what they say together."""

    first: str
    second: str
    rows: list[ComparedRow]

    @property
    def on_both(self) -> list[ComparedRow]:
        return [row for row in self.rows if row.first and row.second]

    @property
    def only_first(self) -> int:
        return sum(1 for row in self.rows if row.second is None)

    @property
    def only_second(self) -> int:
        return sum(1 for row in self.rows if row.first is None)

    @property
    def same_kernel(self) -> int:
        return sum(1 for row in self.rows if row.same_kernel)

    def median_speedup(self, side: str) -> float | None:
        """The median speedup over eager of one side's best kernels, over the problems on both."""
        values = [getattr(row, side).values["eager"] for row in self.on_both]
        return statistics.median(values) if values else None

    @property
    def median_speedup_first(self) -> float | None:
        return self.median_speedup("first")

    @property
    def median_speedup_second(self) -> float | None:
        return self.median_speedup("second")

    @property
    def median_time_ratio(self) -> float | None:
        ratios = [row.time_ratio for row in self.on_both if row.time_ratio]
        return statistics.median(ratios) if ratios else None


def compare(first: str, second: str) -> Comparison:
    """Every problem with a verified kernel on either architecture, in problem order, each side from
    its own leaderboard (the same snapshots its page reads)."""
    firsts = {row.problem: row for row in board(first).rows}
    seconds = {row.problem: row for row in board(second).rows}
    rows = [ComparedRow(firsts.get(pk), seconds.get(pk)) for pk in firsts.keys() | seconds.keys()]
    return Comparison(first, second, sorted(rows, key=lambda row: problem_order(row.problem)))


def best_per_arch(problem: Problem) -> dict[str, BoardRow]:
    """The problem's best kernel on each architecture whose leaderboard lists it, by architecture."""
    found = {arch: next((row for row in board(arch).rows if row.problem == problem.pk), None) for arch in leaderboard_archs()}
    return {arch: row for arch, row in found.items() if row is not None}


def export_lines(arch: str, *, site_url: str = "") -> list[dict]:
    """The leaderboard as CUDA-L1's release shape: one line per listed problem, plus our fields.

    `score_*` are our measured speedups (where CUDA-L1 published theirs); `custom_code` is null
    where no kernel is verified here. Everything we measured besides is under `measured`, with the
    environment's public part only: the file is made to be passed on.
    """
    best = {row.candidate.problem_id: row for row in best_per_problem(arch)}
    codes = dict(Candidate.objects.filter(pk__in=[row.candidate_id for row in best.values()]).values_list("pk", "code"))
    envs = dict(Evaluation.objects.filter(pk__in=[row.pk for row in best.values()]).values_list("pk", "env"))
    lines = []
    for problem in Problem.objects.listed().order_by("level", "task", "id"):
        row = best.get(problem.pk)
        line = {
            "level_id": problem.level,
            "task_id": problem.task,
            "ref_code": problem.source,
            "custom_code": codes[row.candidate_id] if row else None,
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
                "speedup_intervals": {baseline: row.speedup_interval(baseline) for baseline in SPEEDUP_COLUMNS},
                "beats": {baseline: row.beats(baseline) for baseline in SPEEDUP_COLUMNS},
                "env": public_env(envs[row.pk]),
                "degenerate_problem": bool(problem.degenerate),
                "url": f"{site_url}{row.candidate.get_absolute_url()}",
            }
        lines.append(line)
    return lines


def export_body(arch: str, *, site_url: str = "") -> str:
    """The export as served: JSONL, one problem a line."""
    return _snapshot(
        f"export:{arch}:{site_url}",
        lambda: "".join(json.dumps(line, cls=DjangoJSONEncoder) + "\n" for line in export_lines(arch, site_url=site_url)),
        str,
    )


# What changes the leaderboard, and the snapshots that keep it.


def changed() -> None:
    """Something the leaderboard shows may have changed (a verdict, a curation, a problem's
    visibility or statistics): the leaderboard gets a new version in the caller's transaction, so
    the first read after it commits computes it again, and a change rolled back leaves the version
    as it was. Every owner of such a change calls this, last in its transaction (the version's row
    stays locked until the commit): verification.evaluations, court.curation, court.services'
    imports and the admin's edits."""
    token = uuid.uuid4().hex
    with transaction.atomic():
        LeaderboardVersion.objects.update_or_create(pk=1, defaults={"token": token})
        LeaderboardSnapshot.objects.exclude(version=token).delete()


def _current_version() -> str:
    version, _ = LeaderboardVersion.objects.get_or_create(pk=1, defaults={"token": uuid.uuid4().hex})
    return version.token


# What this process read last, by key: (version, computed_at, the value read from the body). A
# request that finds the version unchanged reads nothing more from the database (a board's JSON
# is 100 KB, an export's 2 MB at KernelBench's 250 problems).
_read: dict[str, tuple[str, datetime, object]] = {}


def _snapshot(key: str, compute: Callable[[], str], parse: Callable[[str], T]) -> T:
    """What `key` holds under the current version, parsed: kept by this process, else read from
    its snapshot, else computed and kept in one."""
    key = f"{SHAPE}:{key}"
    version, oldest = _current_version(), timezone.now() - MAX_AGE
    known = _read.get(key)
    if known is not None and known[0] == version and known[1] >= oldest:
        return known[2]
    kept = (
        LeaderboardSnapshot.objects.filter(version=version, key=key, computed_at__gte=oldest)
        .values_list("body", "computed_at")
        .first()
    )
    if kept is not None:
        body, computed_at = kept
    else:
        # The version was read before computing: a change that commits meanwhile leaves this
        # snapshot under the version it replaced, where nothing reads it again.
        body, computed_at = compute(), timezone.now()
        _keep(version, key, body)
    value = parse(body)
    _read[key] = (version, computed_at, value)
    return value


def _keep(version: str, key: str, body: str) -> None:
    try:
        with transaction.atomic():
            LeaderboardSnapshot.objects.filter(version=version, key=key).delete()
            LeaderboardSnapshot.objects.create(version=version, key=key, body=body)
    except IntegrityError:
        pass  # another request kept the same computation first
    except DatabaseError:
        logger.warning("could not keep the leaderboard's %s; it is computed again on the next request", key, exc_info=True)
