"""Selectors: the reads behind the pages and the API. Who sees what is court.models.visibility's."""

import re
from dataclasses import dataclass
from urllib.parse import urlencode

from django.db.models import Count, F, Q, QuerySet
from django.db.models.functions import Length

from court.leaderboard import BoardRow, ComparedRow, problem_order
from court.models import Candidate, Curation, Evaluation, HackReport, OptimizationRun, Problem, RunEvent
from evaluation.harness import HARNESS_VERSION


def listed_problems(*, level: int | None = None) -> QuerySet[Problem]:
    problems = Problem.objects.listed()
    if level is not None:
        problems = problems.filter(level=level)
    return problems


def problem_rows(filters: "ProblemFilters") -> QuerySet[Problem]:
    """The problem list: listed problems matching `filters`, in KernelBench's order."""
    problems = listed_problems(level=filters.level)
    for word in filters.q.split():
        label = _label_lookup(word)
        problems = problems.filter(Q(title__icontains=word) | (Q(**label) if label else Q(pk__in=[])))
    if filters.featured:
        problems = problems.filter(visibility=Problem.Visibility.FEATURED)
    if filters.verified:
        problems = problems.filter(pk__in=_verified_kernels().values("candidate__problem"))
    return problems.order_by("level", "task", "id")


def with_counts(problems) -> list[Problem]:
    """`problems` (a page of them), each with how many listed candidates and current verified
    evaluations it has: two grouped queries for the page, not a count per problem of the table
    (at 20,000 evaluations that was seconds; benchmarks/RESULTS.md)."""
    problems = list(problems)
    ids = [problem.pk for problem in problems]
    candidates = Candidate.objects.listed().filter(problem__in=ids).values("problem").annotate(n=Count("pk"))
    verified = _verified_kernels().filter(candidate__problem__in=ids).values("candidate__problem").annotate(n=Count("pk"))
    candidate_counts = {row["problem"]: row["n"] for row in candidates.order_by()}
    verified_counts = {row["candidate__problem"]: row["n"] for row in verified.order_by()}
    for problem in problems:
        problem.candidate_count = candidate_counts.get(problem.pk, 0)
        problem.verified_count = verified_counts.get(problem.pk, 0)
    return problems


def _verified_kernels() -> QuerySet[Evaluation]:
    return Evaluation.objects.current().verified().listed()


def _label_lookup(word: str) -> dict | None:
    """A search word that names a problem by its label: "L2", "T40", "L2T40" (any case)."""
    match = re.fullmatch(r"(?:l(\d{1,2}))?(?:t(\d{1,3}))?", word.lower())
    if not match or not any(match.groups()):
        return None
    level, task = match.groups()
    return {key: int(value) for key, value in (("level", level), ("task", task)) if value}


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


def run_with_candidates(run_id: int, *, user, runs=()) -> OptimizationRun:
    """The run, if `user` (holding the links of `runs`) may see it (OptimizationRun.DoesNotExist if not)."""
    runs = OptimizationRun.objects.visible_to(user, runs=runs)
    return runs.select_related("problem").prefetch_related("candidates__evaluations").get(pk=run_id)


def runs_of(user) -> QuerySet[OptimizationRun]:
    """The runs `user` started that they may still open, newest first ("My runs")."""
    return OptimizationRun.objects.visible_to(user).filter(requester=user).select_related("problem").order_by("-created_at")


def reports_of(user) -> list[HackReport]:
    """The hack reports `user` filed, newest first ("My reports"), each saying whether its kernel is
    still shown (`kernel_shown`): a hidden kernel is named by its number only."""
    reports = list(
        HackReport.objects.filter(reporter=user)
        .select_related("candidate")
        .prefetch_related("proof_checks")
        .order_by("-created_at")
    )
    shown = set(Candidate.objects.visible_to(user).filter(pk__in={r.candidate_id for r in reports}).values_list("pk", flat=True))
    for report in reports:
        report.kernel_shown = report.candidate_id in shown
    return reports


def evaluations_of(candidate: Candidate) -> QuerySet[Evaluation]:
    """A kernel's evaluations, newest harness first: the page keeps the history. Versions are whole
    numbers written as text: the longer is the newer ("10" after "9"), then by their characters."""
    newest = (Length("harness_version").desc(), F("harness_version").desc())
    return candidate.evaluations.select_related("release").order_by("arch", *newest, "-created_at")


SORTS = {
    "problem": problem_order,
    "eager": lambda row: -(row.values["eager"] or 0),
    "compile": lambda row: -(row.values["compile"] or 0),
    "compile-ro": lambda row: -(row.values["compile-ro"] or 0),
    "cudagraph": lambda row: -(row.values["cudagraph"] or 0),
}
SORT_NAMES = {
    "problem": "problem",
    "eager": "vs eager",
    "compile": "vs torch.compile",
    "compile-ro": "vs compile (reduce-overhead)",
    "cudagraph": "vs CUDA graph",
}
PAGE_SIZE = 50


def _level(value: str) -> int | None:
    return int(value) if value.isdigit() and len(value) < 4 else None


@dataclass
class LeaderboardFilters:
    """The leaderboard's search, filters and sort, read from the query string so that a link keeps
    them (its page too: `query` gives the rest of the URL for another page)."""

    q: str = ""
    level: int | None = None
    origin: str = ""
    flag: str = ""
    featured: bool = False
    wins: bool = False
    sort: str = "problem"
    kind: str = ""

    @classmethod
    def from_query(cls, query) -> "LeaderboardFilters":
        return cls(
            q=query.get("q", "").strip()[:100],
            level=_level(query.get("level", "")),
            origin=query.get("origin", ""),
            flag=query.get("flag", ""),
            featured=query.get("featured") == "1",
            wins=query.get("wins") == "1",
            sort=query.get("sort", "problem") if query.get("sort") in SORTS else "problem",
            kind=query.get("kind", "")[:16],
        )

    def matches(self, row: BoardRow) -> bool:
        words = self.q.lower().split()
        found = f"{row.label} {row.title} #{row.kernel} {row.origin_shown} {' '.join(row.flags)}".lower()
        return (
            all(word in found for word in words)
            and (self.level is None or row.level == self.level)
            and (not self.origin or self.origin in (row.origin_label, row.origin))
            and (not self.flag or self.flag in row.flags)
            and (not self.featured or row.featured)
            and (not self.wins or row.beats("eager"))
            and (not self.kind or row.kind == self.kind)
        )

    def apply(self, rows: list[BoardRow]) -> list[BoardRow]:
        return sorted((row for row in rows if self.matches(row)), key=SORTS[self.sort])

    @property
    def active(self) -> bool:
        return self != LeaderboardFilters(sort=self.sort)

    def query(self) -> str:
        """The filters as a query string, without the page: for links to the other pages."""
        shown = {
            "q": self.q,
            "level": self.level if self.level is not None else "",
            "origin": self.origin,
            "flag": self.flag,
            "featured": "1" if self.featured else "",
            "wins": "1" if self.wins else "",
            "sort": self.sort if self.sort != "problem" else "",
            "kind": self.kind,
        }
        return urlencode({name: value for name, value in shown.items() if value != ""})


@dataclass
class ComparisonFilters:
    """The comparison's search and filters, from the query string (`query` for the other pages' links)."""

    q: str = ""
    level: int | None = None
    both: bool = False

    @classmethod
    def from_query(cls, query) -> "ComparisonFilters":
        return cls(q=query.get("q", "").strip()[:100], level=_level(query.get("level", "")), both=query.get("both") == "1")

    def matches(self, row: ComparedRow) -> bool:
        sides = [side for side in (row.first, row.second) if side]
        found = " ".join(f"{side.label} {side.title} #{side.kernel} {side.origin_shown}" for side in sides).lower()
        return (
            all(word in found for word in self.q.lower().split())
            and (self.level is None or row.problem.level == self.level)
            and (not self.both or len(sides) == 2)
        )

    def apply(self, rows: list[ComparedRow]) -> list[ComparedRow]:
        return [row for row in rows if self.matches(row)]

    @property
    def active(self) -> bool:
        return self != ComparisonFilters()

    def query(self) -> str:
        shown = {"q": self.q, "level": self.level if self.level is not None else "", "both": "1" if self.both else ""}
        return urlencode({name: value for name, value in shown.items() if value != ""})


def leaderboard_choices(rows: list[BoardRow]) -> dict:
    """What the filters offer: the origins and flags found among the board's rows."""
    return {
        "origins": sorted({row.origin_label or row.origin for row in rows}),
        "flags": sorted({flag for row in rows for flag in row.flags}),
        "levels": sorted({row.level for row in rows if row.level is not None}),
        "kinds": sorted({row.kind for row in rows if row.kind}),
    }


@dataclass
class ProblemFilters:
    """The problem list's search and filters, from the query string."""

    q: str = ""
    level: int | None = None
    featured: bool = False
    verified: bool = False

    @classmethod
    def from_query(cls, query) -> "ProblemFilters":
        return cls(
            q=query.get("q", "").strip()[:100],
            level=_level(query.get("level", "")),
            featured=query.get("featured") == "1",
            verified=query.get("verified") == "1",
        )

    def query(self) -> str:
        shown = {
            "q": self.q,
            "level": self.level if self.level is not None else "",
            "featured": "1" if self.featured else "",
            "verified": "1" if self.verified else "",
        }
        return urlencode({name: value for name, value in shown.items() if value != ""})

    @property
    def active(self) -> bool:
        return self != ProblemFilters()


# Consecutive deltas of one kind are joined into one message, up to this many characters.
TRANSCRIPT_CHUNK_CHARS = 16_000
DELTA_KINDS = (RunEvent.Kind.REASONING, RunEvent.Kind.ANSWER)
# What a run's viewer reads where staff hid a kernel of its round: a message of this kind.
REMOVED = "removed"
REMOVED_BY_STAFF = "Removed by staff: this round's kernel was hidden, with what the model wrote for it."
PROMPT_REMOVED = "Removed by staff: this prompt quotes a kernel that was hidden."


@dataclass(frozen=True)
class RunRedaction:
    """What of one run one viewer may not see: the kernels of the run hidden from them, and every
    trace of those in the run's transcript (court.models.visibility). The one place that says so,
    for the run's page, its socket (replay and live) and its API answer.

    A hidden kernel's traces: its announcement (its code and URL) and the verdicts fed back (its code
    again), the model's reasoning and answer in its round (which quote its code), and the prompts of
    later rounds (which quote it as history). Each is replaced by a note keeping its sequence number
    (kind "removed", which a page shows once per round; a prompt keeps its kind, which no page shows),
    so the socket's numbering has no gap.
    Staff see everything: each hidden kernel's announcement is marked (`data.hidden`)."""

    removed: dict[int, int | None]  # the hidden kernels, by pk, with their round
    marked: frozenset[int] = frozenset()  # hidden kernels shown to staff

    @classmethod
    def of(cls, run_id: int, *, user) -> "RunRedaction":
        """What `user`, who may see the run `run_id` (asked before), may not see of it. Seeing the run
        is holding it where it is a paste's: its kernels are held through it."""
        kernels = Candidate.objects.filter(run_id=run_id)
        if user is not None and user.is_staff:
            return cls(removed={}, marked=frozenset(kernels.filter(curation=Curation.HIDDEN).values_list("pk", flat=True)))
        visible = Candidate.objects.visible_to(user, runs=[run_id]).values("pk")
        return cls(removed=dict(kernels.exclude(pk__in=visible).values_list("pk", "round")))

    def shows(self, candidate_id) -> bool:
        return candidate_id not in self.removed

    def message(self, message: dict) -> dict | None:
        """A message of the run's socket (an event of its transcript, or an evaluation's progress)
        as this viewer sees it; None where it is about a hidden kernel and nothing else."""
        kind, data = message["kind"], message.get("data") or {}
        if kind == "evaluation":
            return message if self.shows(message["candidate"]) else None
        if kind == RunEvent.Kind.CANDIDATE and data.get("candidate") in self.marked:
            return {**message, "data": {**data, "hidden": True}}
        rounds = set(self.removed.values())
        if kind == RunEvent.Kind.PROMPT and any(message["round"] > round for round in rounds):
            return {**message, "text": PROMPT_REMOVED}  # no page shows prompts: no note either
        if (kind in (RunEvent.Kind.CANDIDATE, RunEvent.Kind.VERDICTS) and not self.shows(data.get("candidate"))) or (
            kind in DELTA_KINDS and message["round"] in rounds
        ):
            return {"kind": REMOVED, "seq": message.get("seq"), "round": message["round"], "text": REMOVED_BY_STAFF, "data": {}}
        return message

    def messages(self, messages: list[dict]) -> list[dict]:
        return [seen for message in messages if (seen := self.message(message)) is not None]


def run_transcript(run_id: int, *, redaction: RunRedaction) -> list[dict]:
    """The stored events in order as the viewer of `redaction` sees them, with runs of deltas joined
    so a long transcript is few messages."""
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
    return redaction.messages(messages)


def run_events_between(run_id: int, *, after: int, before: int, redaction: RunRedaction) -> list[dict]:
    """The stored events numbered after `after` and before `before`, in order, one message each, as
    the viewer of `redaction` sees them."""
    events = RunEvent.objects.filter(run_id=run_id, seq__gt=after, seq__lt=before).order_by("seq")
    return redaction.messages([event.as_message() for event in events])


def verified_kernels_of(problem: Problem) -> QuerySet[Evaluation]:
    """What is already known to work for a problem, under the current harness: shown at once,
    before any model answers."""
    evaluations = Evaluation.objects.current().verified().listed()
    return evaluations.filter(candidate__problem=problem).select_related("candidate").order_by("-speedup_eager")
