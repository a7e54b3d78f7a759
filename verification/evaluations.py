"""An Evaluation's life, in one place: opened and sent, claimed, advanced, sent back, failed, judged,
imported from a measured release.

Every change of an Evaluation's status or stage is one of these functions, and each saves the row
and then, once the transaction commits, tells the pages watching it (a write and its event
together, as zulip's `zerver/actions/` do). The job (verification.actors), fan-out, the staff tools
and the reconciler (verification.reconciler) all go through them.

An Evaluation is a job row (jobrows): it names the one job message that may run it (`message_id`,
with its `queue`), recorded before the row commits and sent after; a message that is not the row's
does nothing, so re-sending is always safe, and a send that failed is found by the reconciler,
which sends a new message.
"""

import logging

from django.db import transaction
from django.utils import timezone

from court import leaderboard
from court.live.progress import publish_evaluation
from court.models import Candidate, Evaluation, Release
from evaluation.harness import HARNESS_VERSION
from evaluation.harness import verdict as harness_verdict
from jobrows import messages
from jobrows.messages import HeldMessages
from verification.jobs import MAX_RETRIES
from verification.queues import BULK, INTERACTIVE, priority_of, queue_for

logger = logging.getLogger(__name__)

# A worker killed mid-job (OOM, SIGKILL, host loss) gets the message back from the broker, or the
# reconciler sends it again; after this many starts the candidate itself is the likely cause.
MAX_ATTEMPTS = MAX_RETRIES + 2


# The verification job's actors (verification.actors), by priority; messages are made by name here
# because the actors call this module.
INTERACTIVE_ACTOR = "evaluate"
BULK_ACTOR = "reverify"


def _publish_on_commit(evaluation: Evaluation) -> None:
    transaction.on_commit(lambda: publish_evaluation(evaluation))


def send(evaluation: Evaluation, *, priority: str | None = None) -> None:
    """Record a new job message on the row (queued), and send it once the row is committed.

    A broker that cannot take it is logged, not raised: the row stays queued with a message the
    broker does not hold, and the reconciler sends it again.
    """
    priority = priority or priority_of(evaluation.queue) or INTERACTIVE
    queue = queue_for(evaluation.arch, priority=priority)
    actor_name = INTERACTIVE_ACTOR if priority == INTERACTIVE else BULK_ACTOR
    evaluation.status, evaluation.stage = Evaluation.Status.QUEUED, Evaluation.Stage.QUEUED
    # Told before it is sent: once sent, its worker's "building" may come first otherwise.
    messages.send(
        evaluation,
        messages.job_message(queue, actor_name, evaluation.pk),
        also=["status", "stage"],
        before=lambda: publish_evaluation(evaluation),
    )


def is_lost(evaluation: Evaluation, held: HeldMessages | None = None) -> bool:
    """Queued, with no message the broker holds: nothing will ever run it unless it is sent again."""
    if evaluation.status != Evaluation.Status.QUEUED:
        return False
    return not (held or HeldMessages()).holds_job_of(evaluation)


def open_evaluations(candidate: Candidate, archs: list[str], *, priority: str = INTERACTIVE) -> list[Evaluation]:
    """The candidate's evaluation of the current harness on each architecture, created and sent;
    one that exists already is left as it is (the reconciler looks after pending ones)."""
    opened = []
    with transaction.atomic():
        for arch in archs:
            evaluation, created = Evaluation.objects.get_or_create(
                candidate=candidate, arch=arch, harness_version=HARNESS_VERSION
            )
            if created:
                send(evaluation, priority=priority)
                opened.append(evaluation)
    return opened


def claim(evaluation_id: int, *, worker: str, arch: str, message_id: str | None) -> Evaluation | None:
    """Mark the evaluation running on `worker`; None when this message has nothing to do.

    `message_id` is the running job's message (None outside a worker: a direct call, as tests
    make). A pending evaluation is claimed again by its own message after its worker died.
    """
    with transaction.atomic():
        evaluation = Evaluation.objects.select_for_update().select_related("candidate__problem").get(pk=evaluation_id)
        if not evaluation.is_pending:
            logger.info("evaluation %s already has a verdict (%s); nothing to do", evaluation_id, evaluation.status)
            return None
        if not messages.may_run(evaluation, message_id):
            return None
        if evaluation.arch != arch:
            fail(
                evaluation,
                f"Not run: its job reached a worker for {arch}, not {evaluation.arch}. Staff can re-verify it.",
                detail=f"Worker {worker} took this job from {evaluation.queue}: check that worker's queues.",
            )
            return None
        if evaluation.attempts >= MAX_ATTEMPTS:
            fail(
                evaluation,
                f"The worker stopped {evaluation.attempts} times while evaluating this candidate; "
                "it was not run again. Staff can re-verify it.",
            )
            return None
        evaluation.status, evaluation.stage = Evaluation.Status.RUNNING, Evaluation.Stage.BUILDING
        evaluation.worker = worker
        evaluation.started_at = timezone.now()
        messages.start(evaluation, also=["status", "stage", "worker", "started_at"])
        _publish_on_commit(evaluation)
    return evaluation


def advance(evaluation: Evaluation, stage: str) -> None:
    """The harness reached `stage`; "done" goes out with the verdict, not from here (it would tell
    watchers the evaluation is finished while its status still says running)."""
    if stage == Evaluation.Stage.DONE or stage not in Evaluation.Stage.values or stage == evaluation.stage:
        return
    evaluation.stage = stage
    Evaluation.objects.filter(pk=evaluation.pk).update(stage=stage)
    _publish_on_commit(evaluation)


def back_to_queue(evaluation_id: int) -> None:
    """The job raised and the broker will run the same message again: queued until then."""
    Evaluation.objects.filter(pk=evaluation_id, status__in=Evaluation.PENDING).update(
        status=Evaluation.Status.QUEUED, stage=Evaluation.Stage.QUEUED
    )
    _publish_on_commit(Evaluation.objects.select_related("candidate").get(pk=evaluation_id))


def fail(evaluation: Evaluation, reason: str, *, detail: str = "") -> None:
    """Not evaluated, for a reason of ours (infrastructure): `reason` in words the author can act on,
    shown to everyone; `detail`, the raw error, for staff alone (court.models.internal_details)."""
    evaluation.status, evaluation.stage = Evaluation.Status.FAILED, Evaluation.Stage.DONE
    evaluation.reason, evaluation.error_detail = reason, detail
    evaluation.finished_at = timezone.now()
    evaluation.save(update_fields=["status", "stage", "reason", "error_detail", "finished_at"])
    _publish_on_commit(evaluation)


def record_verdict(
    evaluation: Evaluation, verdict: harness_verdict.Verdict, *, worker: str = "", harness_seconds: float | None = None
) -> None:
    """The harness's verdict, stored with the figures the pages sort on, then published; a verified
    one is on the leaderboard from the next request."""
    with transaction.atomic():
        evaluation.apply_verdict(verdict, worker=worker)
        if harness_seconds is not None:
            evaluation.harness_seconds = harness_seconds
        evaluation.save()
        _publish_on_commit(evaluation)
        if evaluation.status == Evaluation.Status.VERIFIED:
            leaderboard.changed()


# What record_imported_verdict did with one verdict of a release.
IMPORTED, UNCHANGED, KEPT_LIVE, KEPT_NEWER = "imported", "unchanged", "kept live", "kept newer"


def record_imported_verdict(
    *, candidate: Candidate, release: Release, verdict: harness_verdict.Verdict, measured_at
) -> tuple[str, Evaluation]:
    """A verdict of a measured release (verification.releases) as the candidate's evaluation on the
    release's architecture under the release's harness, marked with the release; then published.

    One evaluation per candidate, architecture and harness, so what is there decides: a live
    worker's verdict, or one it is running, is kept (KEPT_LIVE); one only queued is taken over (its
    message then finds it finished and does nothing); another release's is replaced where this
    verdict was measured later (`measured_at`), else kept (KEPT_NEWER); this release's own is left
    as it is (UNCHANGED).
    """
    with transaction.atomic():
        evaluation, created = Evaluation.objects.select_for_update().get_or_create(
            candidate=candidate, arch=release.arch, harness_version=release.harness_version
        )
        if not created:
            if evaluation.release_id == release.pk:
                return UNCHANGED, evaluation
            if evaluation.release_id is None and evaluation.status != Evaluation.Status.QUEUED:
                return KEPT_LIVE, evaluation
            if evaluation.release_id is not None and evaluation.finished_at >= measured_at:
                return KEPT_NEWER, evaluation
        was_verified = evaluation.status == Evaluation.Status.VERIFIED
        evaluation.apply_verdict(verdict)
        evaluation.release = release
        evaluation.worker = evaluation.error_detail = ""
        evaluation.started_at = None
        messages.forget(evaluation)
        evaluation.finished_at = measured_at
        evaluation.harness_seconds = (verdict.get("cost") or {}).get("total_s")
        evaluation.save()
        _publish_on_commit(evaluation)
        if was_verified or evaluation.status == Evaluation.Status.VERIFIED:
            leaderboard.changed()
    return IMPORTED, evaluation


def reopen(candidates, *, archs: list[str], priority: str = BULK) -> list[Evaluation]:
    """Evaluate the candidates again under the current harness on `archs`: finished evaluations of
    it there (a live worker's or a release's) are replaced, queued ones whose message the broker
    lost are sent again, running ones are left to their worker. Verdicts on other architectures stay:
    nothing could replace them there."""
    reopened = []
    for candidate in candidates:
        with transaction.atomic():
            current = Evaluation.objects.select_for_update().filter(candidate=candidate, harness_version=HARNESS_VERSION)
            replaced = current.filter(arch__in=archs).exclude(status__in=Evaluation.PENDING)
            was_verified = replaced.filter(status=Evaluation.Status.VERIFIED).exists()
            replaced.delete()
            pending = list(current.filter(status__in=Evaluation.PENDING))
            lost = [evaluation for evaluation in pending if evaluation.arch in archs and is_lost(evaluation)]
            for evaluation in lost:
                send(evaluation, priority=priority)
            missing = [arch for arch in archs if arch not in {evaluation.arch for evaluation in pending}]
            reopened += lost + open_evaluations(candidate, missing, priority=priority)
            if was_verified:
                leaderboard.changed()
    return reopened
