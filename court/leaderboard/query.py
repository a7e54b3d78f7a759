"""What the leaderboard may show, asked of the database: the evaluations that count, the best
kernel per problem, and which architectures have a board.

Only evaluations of the current harness version count, only listed or featured kernels, and only
problems that are listed (degenerate ones stay out of the statistics unless staff count them in).
"""

from django.db.models import F, QuerySet, Window
from django.db.models.functions import RowNumber

from court.models import Evaluation, Problem

SPEEDUP_COLUMNS = Evaluation.SPEEDUP_FIELDS
# A kernel "beats" a baseline when the whole 95% interval of its speedup is above 1.01
# (court.models.evaluations.Speedup); a speedup within noise of 1 is no win.


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


def arch_exists(arch: str) -> bool:
    """An architecture some worker has evaluated on: its board may be empty, but it is coming. Any
    other name has no board (pages, API, export and socket answer 404)."""
    return Evaluation.objects.filter(arch=arch).exists()


def computed_archs() -> list[str]:
    """Architectures with something to show, asked of the database (boards.leaderboard_archs keeps it)."""
    return sorted(set(leaderboard_evaluations().order_by().values_list("arch", flat=True).distinct()))
