"""Kernels measured by an older harness: what the leaderboard marks and staff re-verify.

When HARNESS_VERSION moves, a listed kernel verified under an older harness leaves the board until a
verdict of the current one arrives (court.leaderboard counts only those). Until then the board marks
it (`marks`), and the admin's page shows how far its re-verification has come (`progress`). A mark
clears when a verdict of the current harness is finished on that architecture, whatever it says: a
kernel the new harness rejects stays off the board, and its page shows both verdicts.
"""

from dataclasses import dataclass

from court.models import Candidate, Evaluation
from evaluation.harness import HARNESS_VERSION


@dataclass(frozen=True)
class Mark:
    kernel: Candidate
    harness_version: str  # of its newest verified verdict on the architecture
    speedup_eager: float | None  # as that verdict measured it
    queued: bool  # a verdict of the current harness is queued or running


@dataclass(frozen=True)
class Progress:
    arch: str
    total: int  # listed kernels verified there under an older harness
    done: int  # of those, with a finished verdict of the current harness
    queued: int  # with one queued or running

    @property
    def waiting(self) -> int:
        return self.total - self.done - self.queued

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 100


def _version_order(version: str) -> tuple[int, str]:
    # Whole numbers written as text: the longer is the newer ("10" after "9").
    return len(version), version


def _older(arch: str | None = None):
    older = Evaluation.objects.verified().listed().exclude(harness_version=HARNESS_VERSION)
    return older if arch is None else older.filter(arch=arch)


def _current_states(arch: str) -> tuple[set[int], set[int]]:
    """The candidates with a finished, and with a pending, evaluation of the current harness on `arch`."""
    finished: set[int] = set()
    pending: set[int] = set()
    for candidate, status in Evaluation.objects.current().filter(arch=arch).values_list("candidate", "status"):
        (pending if status in Evaluation.PENDING else finished).add(candidate)
    return finished, pending


def marks(arch: str) -> list[Mark]:
    """The listed kernels the board of `arch` marks: verified there by an older harness, with no
    finished verdict of the current one yet. In the problems' order."""
    finished, pending = _current_states(arch)
    newest: dict[int, Evaluation] = {}
    for evaluation in _older(arch).exclude(candidate__in=finished).select_related("candidate__problem"):
        kept = newest.get(evaluation.candidate_id)
        if kept is None or _version_order(evaluation.harness_version) > _version_order(kept.harness_version):
            newest[evaluation.candidate_id] = evaluation
    shown = sorted(
        newest.values(),
        key=lambda e: (e.candidate.problem.level or 99, e.candidate.problem.task or 0, e.candidate_id),
    )
    return [Mark(e.candidate, e.harness_version, e.speedup_eager, e.candidate_id in pending) for e in shown]


def progress() -> list[Progress]:
    """Per architecture, how many listed kernels of an older harness have a verdict of this one."""
    rows = []
    for arch in sorted(set(_older().values_list("arch", flat=True).distinct())):
        kernels = set(_older(arch).values_list("candidate", flat=True))
        finished, pending = _current_states(arch)
        rows.append(Progress(arch, len(kernels), len(kernels & finished), len(kernels & pending - finished)))
    return rows
