"""Services: the actions that change the platform's data, each in one transaction."""

from django.db import transaction

from kernels.curation import request_proof_check
from kernels.models import Candidate, Claim, HackReport, Problem
from kernels.source import detect_language_of, source_hash
from kernels.validation import SourceError, validate_candidate, validate_problem


@transaction.atomic
def submit_problem(*, source: str, submitted_by=None) -> tuple[Problem, bool]:
    """Accept a pasted module; the same module pasted twice is the same problem."""
    valid = validate_problem(source)
    existing = Problem.objects.filter(normalized_hash=valid.normalized_hash).first()
    if existing:
        return existing, False
    problem = Problem.objects.create(
        source=valid.source,
        normalized_hash=valid.normalized_hash,
        title=valid.title,
        origin=Problem.Origin.USER,
        submitted_by=submitted_by,
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
                # Someone pasted this task before the catalogue was loaded: it becomes the task.
                taken.origin, taken.level, taken.task = Problem.Origin.KERNELBENCH, level, task
                taken.title = taken.title or valid.title
                taken.save(update_fields=["origin", "level", "task", "title"])
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
        return problem, "created"
    if problem.normalized_hash == valid.normalized_hash:
        return problem, "unchanged"
    problem.source, problem.normalized_hash, problem.title = valid.source, valid.normalized_hash, valid.title
    problem.save(update_fields=["source", "normalized_hash", "title"])
    return problem, "updated"


@transaction.atomic
def import_candidate(
    *, problem: Problem, code: str, origin_label: str, arch: str, claims: dict[str, float | None]
) -> tuple[Candidate, bool]:
    """Add an imported candidate, unverified, with its publisher's claims kept beside it.

    The code is stored even when it does not define `ModelNew` on its own: the harness then
    says so in its verdict, which is the record a reader should see.
    """
    candidate, created = Candidate.objects.get_or_create(
        problem=problem,
        run=None,
        source_hash=source_hash(code),
        defaults={
            "code": code,
            "language": detect_language_of(code),
            "origin": Candidate.Origin.IMPORT,
            "origin_label": origin_label,
        },
    )
    Claim.objects.update_or_create(candidate=candidate, source=origin_label, arch=arch, defaults=claims)
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


@transaction.atomic
def submit_candidate(*, problem: Problem, code: str, submitted_by=None) -> tuple[Candidate, bool]:
    """Accept a person's candidate for a problem; the same code submitted twice is one candidate."""
    valid = validate_candidate(code)
    return Candidate.objects.get_or_create(
        problem=problem,
        run=None,
        source_hash=valid.source_hash,
        defaults={
            "code": code,
            "language": valid.language,
            "origin": Candidate.Origin.PERSON,
            "submitted_by": submitted_by,
        },
    )
