"""Proof checks: a hack report's inputs run against its kernel; a kernel that breaks goes under review.

No staff action is needed for that first step: the kernel leaves the leaderboard at once, staff
are told by mail, and they confirm or reject the report. Every outcome is in the audit log.
"""

import logging
import traceback
from collections.abc import Mapping
from typing import Any

import dramatiq
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from court.curation import audit, curate_kernel
from court.models import Curation, HackReport, ProofCheck
from court.models.internal_details import without_paths
from court.models.visibility import LISTED_CURATION
from evaluation.harness import verdict as harness_verdict
from jobrows import messages
from verification.evaluations import MAX_ATTEMPTS
from verification.heartbeats import current_registration
from verification.jobs import JOB_OPTIONS, MAX_RETRIES, retries_so_far, run_harness, store_through_outage
from verification.queues import queue_for

logger = logging.getLogger(__name__)


PROOF_ACTOR = "check_proof"


@dramatiq.actor(actor_name=PROOF_ACTOR, queue_name=queue_for("cpu"), **JOB_OPTIONS)
def check_proof(proof_check_id: int) -> None:
    """Run a hack report's proof inputs against its kernel on this worker's architecture."""
    check = claim(proof_check_id, message_id=messages.current_message_id())
    if check is None:
        return
    try:
        verdict = run_harness(check.report.candidate, proof_inputs_source=check.report.proof_code)
    except Exception:
        logger.exception("proof check %s of report %s on %s failed", check.pk, check.report_id, check.arch)
        retries = retries_so_far()
        if retries >= MAX_RETRIES:  # the last try: say so, rather than leave the check queued for ever
            record_proof_verdict(
                check,
                {
                    "status": "failed",
                    "reason": f"The check failed {retries + 1} times on our side, not because of the proof; staff will look.",
                    "error_detail": traceback.format_exc(),  # staff's: the check's verdict is shown only in the admin
                },
            )
        raise
    store_through_outage(lambda: record_proof_verdict(check, verdict), what=f"store the verdict of proof check {check.pk}")


def enqueue_proof_checks(report: HackReport, archs: list[str]) -> list[ProofCheck]:
    checks = []
    for arch in archs:
        check, created = ProofCheck.objects.get_or_create(report=report, arch=arch)
        if created:
            send(check)
            checks.append(check)
    return checks


def send(check: ProofCheck) -> None:
    """Record a new job message on the check and send it once the row commits (jobrows.messages):
    a lost one is sent again by the reconciler."""
    check.worker, check.started_at = "", None
    messages.send(check, messages.job_message(queue_for(check.arch), PROOF_ACTOR, check.pk), also=["worker", "started_at"])


def claim(check_id: int, *, message_id: str | None) -> ProofCheck | None:
    """The check, started by this worker; None when this message has nothing to do (the check is
    finished, or names another message). One whose workers kept dying ends failed."""
    with transaction.atomic():
        check = ProofCheck.objects.select_for_update().select_related("report__candidate__problem").get(pk=check_id)
        if check.status != ProofCheck.Status.QUEUED:
            return None
        if not messages.may_run(check, message_id):
            return None
        exhausted = check.attempts >= MAX_ATTEMPTS
        if not exhausted:
            check.worker, check.started_at = current_registration().name, timezone.now()
            messages.start(check, also=["worker", "started_at"])
    if exhausted:
        record_proof_verdict(check, stopped_too_often(check.attempts))
        return None
    return check


def stopped_too_often(attempts: int) -> dict:
    return {
        "status": "failed",
        "reason": f"The worker stopped {attempts} times while checking this proof; it was not run again. Staff will look.",
    }


# What a proof check found, by the harness's status. A kernel wrong or caught cheating on the run
# with the reporter's inputs breaks. An error, crash or timeout does not count against it: a proof
# whose own get_inputs() raises ends the same way, and would otherwise let anyone take any kernel
# off the leaderboard. Staff hear of those and look themselves.
OUTCOMES = {
    harness_verdict.VERIFIED: ProofCheck.Status.HOLDS,
    harness_verdict.INCORRECT: ProofCheck.Status.BREAKS,
    harness_verdict.REJECTED: ProofCheck.Status.BREAKS,
}


def record_proof_verdict(check: ProofCheck, verdict: Mapping[str, Any]) -> None:
    """A kernel that breaks on the proof's inputs goes under review at once, and staff are told."""
    report, candidate = check.report, check.report.candidate
    check.status = OUTCOMES.get(verdict.get("status", ""), ProofCheck.Status.FAILED)
    check.reason = without_paths(verdict.get("reason", ""))  # the reporter reads it; the verdict keeps it whole
    check.verdict = verdict
    check.finished_at = timezone.now()
    breaks = check.status == ProofCheck.Status.BREAKS
    with transaction.atomic():
        check.save()
        audit(actor=None, action=f"proof check {check.status}", target=report, detail=f"on {check.arch}: {check.reason}")
        if breaks and candidate.curation in LISTED_CURATION:
            curate_kernel(
                candidate=candidate,
                state=Curation.UNDER_REVIEW,
                by=None,
                reason=f"Hack report {report.pk}: on the reporter's inputs ({check.arch}) {check.reason}",
            )
    if check.status == ProofCheck.Status.HOLDS:
        return
    tell_staff(
        subject=f"Kernel {candidate.pk} is under review: report {report.pk}'s proof breaks it"
        if breaks
        else f"Report {report.pk}'s proof could not be checked against kernel {candidate.pk}",
        message=(
            f"On {check.arch}, with the inputs of hack report {report.pk}, the harness said: {check.reason}\n"
            + (f"The error:\n{verdict['error_detail']}\n" if verdict.get("error_detail") else "")
            + f"Kernel: {settings.SITE_URL}{candidate.get_absolute_url()}\n"
            + (
                "Triage it in the admin: confirm (delist) or reject the report."
                if breaks
                else "The kernel stays listed: look at the proof, then triage the report in the admin."
            )
        ),
    )


def tell_staff(*, subject: str, message: str) -> int:
    """Mail every active staff member with an address, and the configured ADMINS."""
    staff = get_user_model().objects.filter(is_staff=True, is_active=True).exclude(email="")
    recipients = sorted({user.email for user in staff} | {email for _, email in settings.ADMINS})
    if not recipients:
        logger.warning("no staff address to tell: %s", subject)
        return 0
    try:
        return send_mail(subject, message, None, recipients)
    except Exception:
        logger.exception("could not mail staff: %s", subject)
        return 0
