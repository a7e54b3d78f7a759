"""Services: the actions that change the platform's data, each in one transaction."""

from django.db import transaction

from court import leaderboard
from court.curation import request_proof_check
from court.models import Candidate, Claim, HackReport, OptimizationRun, Problem
from court.signals import candidate_created
from court.source import detect_language_of, source_hash
from court.validation import SourceError, validate_candidate, validate_problem
from evaluation.harness.static_analysis import optimization_kind


@transaction.atomic
def submit_problem(*, source: str, submitted_by=None) -> tuple[Problem, bool]:
    """Accept a pasted module; the same module pasted twice is the same problem. A new paste is
    unlisted: it belongs to its runs (court.models.visibility) until staff promote it."""
    valid = validate_problem(source)
    existing = Problem.objects.filter(normalized_hash=valid.normalized_hash).first()
    if existing:
        return existing, False
    problem = Problem.objects.create(
        source=valid.source,
        normalized_hash=valid.normalized_hash,
        title=valid.title,
        origin=Problem.Origin.USER,
        visibility=Problem.Visibility.UNLISTED,
        submitted_by=submitted_by if submitted_by is not None and submitted_by.is_authenticated else None,
    )
    return problem, True


@transaction.atomic
def import_kernelbench_problem(*, level: int, task: int, source: str) -> tuple[Problem, str]:
    """Create or update KernelBench task (level, task); returns the problem and created/updated/unchanged."""
    valid = validate_problem(source)
    problem = Problem.objects.filter(origin=Problem.Origin.KERNELBENCH, level=level, task=task).first()
    if problem is None:
        taken = Problem.objects.filter(normalized_hash=valid.normalized_hash).first()
        if taken is not None:
            if taken.origin == Problem.Origin.USER:
                # Someone pasted this task before the catalogue was loaded: it becomes the task, listed
                # as the catalogue's are (unless staff hid it).
                taken.origin, taken.level, taken.task = Problem.Origin.KERNELBENCH, level, task
                taken.title = taken.title or valid.title
                if taken.visibility == Problem.Visibility.UNLISTED:
                    taken.visibility = Problem.Visibility.LISTED
                taken.save(update_fields=["origin", "level", "task", "title", "visibility"])
                leaderboard.changed()
                return taken, "updated"
            raise SourceError([f"Level {level} task {task} has the same code as {taken.label}."])
        problem = Problem.objects.create(
            source=valid.source,
            normalized_hash=valid.normalized_hash,
            title=valid.title,
            origin=Problem.Origin.KERNELBENCH,
            level=level,
            task=task,
        )
        leaderboard.changed()  # one more problem in the statistics' counts
        return problem, "created"
    if problem.normalized_hash == valid.normalized_hash:
        return problem, "unchanged"
    problem.source, problem.normalized_hash, problem.title = valid.source, valid.normalized_hash, valid.title
    problem.save(update_fields=["source", "normalized_hash", "title"])
    leaderboard.changed()
    return problem, "updated"


@transaction.atomic
def create_candidate(
    *,
    problem: Problem,
    code: str,
    origin: str,
    run: OptimizationRun | None = None,
    round: int | None = None,
    submitted_by=None,
    origin_label: str = "",
) -> tuple[Candidate, bool]:
    """The one way a candidate comes to be, from a person, a model's run or an import: validated,
    the same code for the same problem (or run) kept once, and announced (`candidate_created`,
    which sends it to the workers once the transaction commits).

    Code a person or a model wrote that is not a module defining `ModelNew` is refused with what
    to fix (SourceError). A published entry is kept as published even then: its evaluation's
    verdict records why it fails, which is what a reader of the audit should see.
    """
    try:
        valid = validate_candidate(code)
        language, digest = valid.language, valid.source_hash
    except SourceError:
        if origin != Candidate.Origin.IMPORT:
            raise
        language, digest = detect_language_of(code), source_hash(code)
    candidate, created = Candidate.objects.get_or_create(
        problem=problem,
        run=run,
        source_hash=digest,
        defaults={
            "code": code,
            "language": language,
            "kind": optimization_kind(code, problem.source),
            "origin": origin,
            "origin_label": origin_label,
            "round": round,
            "submitted_by": submitted_by if submitted_by is not None and submitted_by.is_authenticated else None,
        },
    )
    if created:
        candidate_created.send(sender=Candidate, candidate=candidate)
    return candidate, created


@transaction.atomic
def import_candidate(
    *,
    problem: Problem,
    code: str,
    origin_label: str,
    arch: str | None = None,
    claims: dict[str, float | None] | None = None,
    claimed_by: str = "",
) -> tuple[Candidate, bool]:
    """Add an imported candidate with its publisher's claims (on `arch`, by `claimed_by`, by default
    who it came from) kept beside it, never as a measurement; without claims, the candidate alone."""
    candidate, created = create_candidate(problem=problem, code=code, origin=Candidate.Origin.IMPORT, origin_label=origin_label)
    if claims is not None:
        assert arch is not None  # claims are measured on one architecture
        source = claimed_by or origin_label
        existing = Claim.objects.filter(candidate=candidate, source=source, arch=arch).first()
        if existing is None:
            Claim.objects.create(candidate=candidate, source=source, arch=arch, **claims)
        elif any(getattr(existing, field) != value for field, value in claims.items()):
            Claim.objects.filter(pk=existing.pk).update(**claims)
    return candidate, created


@transaction.atomic
def file_hack_report(*, candidate: Candidate, reporter, category: str, text: str, proof_code: str = "") -> HackReport:
    """Record a report against a kernel, tied to its newest verified evaluation when it has one."""
    evaluation = candidate.evaluations.filter(status="verified").order_by("-finished_at").first()
    report = HackReport.objects.create(
        candidate=candidate,
        evaluation=evaluation,
        reporter=reporter,
        category=category,
        text=text,
        proof_code=proof_code,
    )
    request_proof_check(report)
    return report


def submit_candidate(*, problem: Problem, code: str, submitted_by=None) -> tuple[Candidate, bool]:
    """Accept a person's candidate for a problem; the same code submitted twice is one candidate."""
    return create_candidate(problem=problem, code=code, origin=Candidate.Origin.PERSON, submitted_by=submitted_by)
