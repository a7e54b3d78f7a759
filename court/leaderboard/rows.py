"""A leaderboard row: one problem's best kernel as the pages, the API and the statistics read it,
with the links to its problem and kernel. A row is plain data, so a board's snapshot keeps it as
JSON (snapshots.SHAPE names its fields' version).
"""

from dataclasses import dataclass
from datetime import datetime

from django.urls import reverse

from court.leaderboard.query import SPEEDUP_COLUMNS, in_statistics
from court.models import Candidate, Curation, Evaluation
from court.models.evaluations import SHOWN_BASELINES, Speedup
from evaluation.harness.static_analysis import KINDS


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
            release=evaluation.release.name if evaluation.release is not None else "",
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


def problem_order(row: BoardRow) -> tuple:
    """Rows in the order of their problems: by level, then task (the leaderboard's default sort)."""
    return (row.level or 99, row.task or 0, row.problem)
