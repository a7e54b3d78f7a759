"""Selectors: the reads behind the pages and the API. Who sees what is kernels.models.visibility's."""

from dataclasses import dataclass

from django.db.models import Count, QuerySet

from evaluation.harness import HARNESS_VERSION
from kernels.leaderboard import BoardRow
from kernels.models import Candidate, Evaluation, OptimizationRun, Problem, RunEvent
from kernels.models.visibility import current_verified_q, listed_candidate_q


def listed_problems(*, level: int | None = None) -> QuerySet[Problem]:
    problems = Problem.objects.listed()
    if level is not None:
        problems = problems.filter(level=level)
    listed = listed_candidate_q("candidates__")
    # Both counts join the same rows (a candidate once per evaluation): hence distinct.
    return problems.annotate(
        candidate_count=Count("candidates", filter=listed, distinct=True),
        verified_count=Count(
            "candidates__evaluations", filter=listed & current_verified_q("candidates__evaluations__"), distinct=True
        ),
    )


def problem_levels() -> list[int]:
    return list(Problem.objects.listed().exclude(level=None).order_by("level").values_list("level", flat=True).distinct())


def listed_candidates_of(problem: Problem) -> QuerySet[Candidate]:
    return problem.candidates.listed().prefetch_related("claims", "evaluations").order_by("-created_at")


def outdated_kernels(*, arch: str | None = None, candidates=None) -> dict[str, list[Candidate]]:
    """Listed kernels that a harness change took off an architecture's leaderboard, per architecture:
    verified there under an older harness, with no evaluation of the current one (pending or done)."""
    kernels = (Candidate.objects.all() if candidates is None else candidates).listed()
    older = Evaluation.objects.verified().exclude(harness_version=HARNESS_VERSION)
    if arch is not None:
        older = older.filter(arch=arch)
    plan = {}
    for where in sorted(set(older.filter(candidate__in=kernels).values_list("arch", flat=True))):
        current = Evaluation.objects.current().filter(arch=where).values("candidate")
        missing = kernels.filter(pk__in=older.filter(arch=where).values("candidate")).exclude(pk__in=current)
        if missing.exists():
            plan[where] = list(missing.order_by("pk"))
    return plan


def run_with_candidates(run_id: int, *, user) -> OptimizationRun:
    """The run, if `user` may see it (OptimizationRun.DoesNotExist if not)."""
    runs = OptimizationRun.objects.visible_to(user)
    return runs.select_related("problem").prefetch_related("candidates__evaluations").get(pk=run_id)


def evaluations_of(candidate: Candidate) -> QuerySet[Evaluation]:
    """A kernel's evaluations, newest harness first: the page keeps the history."""
    return candidate.evaluations.order_by("arch", "-harness_version", "-created_at")


SORTS = {
    "problem": lambda row: (row.level or 99, row.task or 0),
    "eager": lambda row: -(row.values["eager"] or 0),
    "compile": lambda row: -(row.values["compile"] or 0),
    "compile-ro": lambda row: -(row.values["compile-ro"] or 0),
    "cudagraph": lambda row: -(row.values["cudagraph"] or 0),
}


@dataclass
class LeaderboardFilters:
    """The leaderboard's filters and sort, read from the query string so links can share them."""

    level: int | None = None
    origin: str = ""
    flag: str = ""
    sort: str = "problem"

    @classmethod
    def from_query(cls, query) -> "LeaderboardFilters":
        level = query.get("level", "")
        return cls(
            level=int(level) if level.isdigit() else None,
            origin=query.get("origin", ""),
            flag=query.get("flag", ""),
            sort=query.get("sort", "problem") if query.get("sort") in SORTS else "problem",
        )

    def apply(self, rows: list[BoardRow]) -> list[BoardRow]:
        selected = [
            row
            for row in rows
            if (self.level is None or row.level == self.level)
            and (not self.origin or self.origin in (row.origin_label, row.origin))
            and (not self.flag or self.flag in row.flags)
        ]
        return sorted(selected, key=SORTS[self.sort])


# Consecutive deltas of one kind are joined into one message, up to this many characters.
TRANSCRIPT_CHUNK_CHARS = 16_000
DELTA_KINDS = (RunEvent.Kind.REASONING, RunEvent.Kind.ANSWER)


def run_transcript(run_id: int) -> list[dict]:
    """The stored events in order, with runs of deltas joined so a long transcript is few messages."""
    messages: list[dict] = []
    for event in RunEvent.objects.filter(run_id=run_id).order_by("seq").iterator():
        last = messages[-1] if messages else None
        if (
            last is not None
            and event.kind in DELTA_KINDS
            and (last["kind"], last["round"]) == (event.kind, event.round)
            and len(last["text"]) + len(event.text) <= TRANSCRIPT_CHUNK_CHARS
        ):
            last["text"] += event.text
            last["seq"] = event.seq
        else:
            messages.append(event.as_message())
    return messages


def run_events_between(run_id: int, *, after: int, before: int) -> list[dict]:
    """The stored events numbered after `after` and before `before`, in order, one message each."""
    events = RunEvent.objects.filter(run_id=run_id, seq__gt=after, seq__lt=before).order_by("seq")
    return [event.as_message() for event in events]


def verified_kernels_of(problem: Problem) -> QuerySet[Evaluation]:
    """What is already known to work for a problem, under the current harness: shown at once,
    before any model answers."""
    evaluations = Evaluation.objects.current().verified().listed()
    return evaluations.filter(candidate__problem=problem).select_related("candidate").order_by("-speedup_eager")
