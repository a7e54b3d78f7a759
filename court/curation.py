"""Curation: what staff do to kernels, problems and reports, each written to the audit log.

Every function here is the one way its action happens, from the admin, the pages and the API
alike, so the audit log is complete.
"""

import logging

from django.db import transaction
from django.utils import timezone

from court import leaderboard
from court.live.broadcast import group_send
from court.live.events import candidate_group, run_group
from court.models import AuditEntry, Candidate, Curation, HackReport, OptimizationRun, Problem, ProofCheck
from court.selectors import outdated_kernels
from court.signals import proof_check_requested, reverification_requested
from evaluation.harness import HARNESS_VERSION

logger = logging.getLogger(__name__)


def audit(*, actor, action: str, target, detail: str = "") -> AuditEntry:
    return AuditEntry.objects.create(
        actor=actor if actor is not None and actor.is_authenticated else None,
        action=action,
        target_type=target._meta.model_name,
        target_id=target.pk,
        detail=detail,
    )


@transaction.atomic
def curate_kernel(*, candidate: Candidate, state: str, by, reason: str = "") -> Candidate:
    previous = candidate.curation
    candidate.curate(state=state, by=by if by is not None and by.is_authenticated else None, reason=reason)
    audit(actor=by, action=f"kernel {state}", target=candidate, detail=f"was {previous}. {reason}".strip())
    recheck_sockets([candidate_group(candidate.pk)] + ([run_group(candidate.run_id)] if candidate.run_id else []))
    leaderboard.changed()
    return candidate


@transaction.atomic
def set_problem_visibility(*, problem: Problem, visibility: str, by) -> Problem:
    if visibility not in Problem.Visibility.values:
        raise ValueError(f"Unknown visibility {visibility!r}; choose one of {', '.join(Problem.Visibility.values)}.")
    previous, problem.visibility = problem.visibility, visibility
    problem.save(update_fields=["visibility"])
    audit(actor=by, action=f"problem {visibility}", target=problem, detail=f"was {previous}")
    recheck_sockets(
        [candidate_group(pk) for pk in problem.candidates.values_list("pk", flat=True)]
        + [run_group(pk) for pk in OptimizationRun.objects.filter(problem=problem).values_list("pk", flat=True)]
    )
    leaderboard.changed()
    return problem


@transaction.atomic
def promote_problem(*, problem: Problem, by) -> Problem:
    """Staff make a pasted module a public problem: listed, its kernels on the leaderboard and in
    its statistics. Only an unlisted paste is promoted; the others have a visibility of their own."""
    if problem.visibility != Problem.Visibility.UNLISTED:
        raise ValueError(f"{problem.label} is {problem.visibility}, not an unlisted paste: set its visibility instead.")
    problem.visibility = Problem.Visibility.LISTED
    problem.save(update_fields=["visibility"])
    audit(actor=by, action="problem promoted", target=problem, detail="was unlisted (a paste seen through its runs)")
    leaderboard.changed()
    return problem


def recheck_sockets(groups: list[str]) -> None:
    """Once committed, the open sockets of `groups` ask again whether their viewer may still see
    what they follow, and close if not (court.consumers): hiding something ends its live view."""

    def send():
        for group in groups:
            try:
                group_send(group, {"type": "court.recheck"})
            except Exception:
                logger.exception("could not tell %s's sockets to look again", group)

    transaction.on_commit(send)


@transaction.atomic
def set_problem_in_statistics(*, problem: Problem, counted: bool, by) -> Problem:
    problem.counts_in_statistics = counted
    problem.save(update_fields=["counts_in_statistics"])
    audit(actor=by, action="problem counted in statistics" if counted else "problem kept out of statistics", target=problem)
    leaderboard.changed()
    return problem


def request_reverification(*, candidates, by=None, reason: str = "staff request") -> int:
    """Evaluate the candidates again on every live architecture under the current harness (the jobs
    app replaces their finished evaluations of it, and sends queued ones again)."""
    candidates = list(candidates)
    with transaction.atomic():
        for candidate in candidates:
            audit(actor=by, action="kernel re-verification", target=candidate, detail=reason)
    reverification_requested.send(sender=Candidate, candidates=candidates)
    return len(candidates)


def request_outdated_reverification(*, candidates, by) -> list[Candidate]:
    """After a harness change: send the listed kernels among `candidates` that lack a verdict of the
    current harness where they were verified before to the live architectures' bulk queues. Kernels
    with an evaluation of the current harness there, pending or done, are left alone."""
    plan = outdated_kernels(candidates=candidates)
    kernels = sorted({kernel for kernels in plan.values() for kernel in kernels}, key=lambda kernel: kernel.pk)
    with transaction.atomic():
        for arch, outdated in plan.items():
            for kernel in outdated:
                audit(
                    actor=by,
                    action="kernel re-verification",
                    target=kernel,
                    detail=f"no verdict of harness {HARNESS_VERSION} on {arch}",
                )
    reverification_requested.send(sender=Candidate, candidates=kernels)
    return kernels


class DecisionRefused(ValueError):
    """A decision the report's state does not allow now; the message says why and what to do."""


def pending_proof_checks(report: HackReport) -> list[str]:
    """The architectures where the report's proof is still queued or running."""
    return sorted(report.proof_checks.filter(status=ProofCheck.Status.QUEUED).values_list("arch", flat=True))


def decision_refusal(*, report: HackReport, status: str, resolution: str = "", duplicate_of=None) -> str:
    """Why staff may not decide `status` on `report` now, or "" when they may: the one rule the admin's
    form and actions and the API's triage keep."""
    if status not in (HackReport.Status.CONFIRMED, HackReport.Status.REJECTED, HackReport.Status.DUPLICATE):
        return "A report is confirmed, rejected or marked duplicate."
    if status == HackReport.Status.DUPLICATE and duplicate_of is None:
        return "Name the report this one duplicates."
    if pending := pending_proof_checks(report):
        return (
            f"The report's proof is still being checked on {', '.join(pending)}: decide once the check has its "
            "verdict (shown with the report), so that the decision weighs it."
        )
    if status == HackReport.Status.CONFIRMED:
        if report.status == HackReport.Status.CONFIRMED:
            return f"Report {report.pk} is already confirmed: its kernel was delisted then."
        if not (resolution.strip() or report.resolution):
            return (
                "A confirmation needs a resolution of its own: it is shown publicly as the reason the kernel "
                "is delisted, and the reporter's text stays private."
            )
    return ""


@transaction.atomic
def triage_report(*, report: HackReport, status: str, by, resolution: str = "", duplicate_of=None) -> HackReport:
    """Staff's decision on a report. A confirmed hack delists the kernel with staff's resolution as
    the public reason (given here, or written on the report in the admin), never the reporter's
    text, which stays between them and staff. A report is confirmed once, and a kernel delisted once;
    nothing is decided while the report's proof is still being checked."""
    if refusal := decision_refusal(report=report, status=status, resolution=resolution, duplicate_of=duplicate_of):
        raise DecisionRefused(refusal)
    resolution = resolution.strip() or report.resolution
    report.status = status
    report.resolution = resolution
    report.duplicate_of = duplicate_of if status == HackReport.Status.DUPLICATE else None
    report.triaged_by = by
    report.triaged_at = timezone.now()
    report.save()
    audit(actor=by, action=f"report {status}", target=report, detail=report.resolution)
    candidate = report.candidate
    if status == HackReport.Status.CONFIRMED and candidate.curation != Curation.DELISTED:
        curate_kernel(candidate=candidate, state=Curation.DELISTED, by=by, reason=resolution)
    elif (
        status == HackReport.Status.REJECTED
        and candidate.curation == Curation.UNDER_REVIEW
        and not candidate.hack_reports.filter(status=HackReport.Status.OPEN).exists()
    ):
        curate_kernel(candidate=candidate, state=Curation.LISTED, by=by, reason="Report rejected.")
    return report


def listed_architectures(candidate: Candidate) -> list[str]:
    """Where the kernel is verified under the current harness: where a report's proof is checked."""
    return sorted(set(candidate.evaluations.current().verified().values_list("arch", flat=True)))


def request_proof_check(report: HackReport) -> list[str]:
    archs = listed_architectures(report.candidate)
    if report.proof_code.strip() and archs:
        transaction.on_commit(lambda: proof_check_requested.send(sender=HackReport, report=report, archs=archs))
    return archs
