"""Fan-out: one evaluation job per live architecture for each new candidate.

An architecture is live while one of its workers has a fresh heartbeat. A candidate saved while
an architecture is offline is evaluated there when staff ask it to catch up.
"""

import logging

import dramatiq
from django.db import transaction

from evaluation.harness import HARNESS_VERSION
from kernels.models import Candidate, Evaluation
from verification.models import GpuWorker
from verification.progress import publish_evaluation
from verification.queues import BULK, INTERACTIVE, queue_for

logger = logging.getLogger(__name__)


def enqueue(evaluation: Evaluation, *, priority: str = INTERACTIVE) -> None:
    """Send the job once the evaluation row is committed, so a worker always finds it."""
    from verification.actors import evaluate, reverify

    actor = evaluate if priority == INTERACTIVE else reverify
    queue = queue_for(evaluation.arch, priority=priority)

    def send():
        broker = dramatiq.get_broker()
        broker.declare_queue(queue)
        broker.enqueue(actor.message(evaluation.pk).copy(queue_name=queue))
        publish_evaluation(evaluation)

    transaction.on_commit(send)


def fan_out(candidate: Candidate, *, archs: list[str] | None = None, priority: str = INTERACTIVE) -> list[Evaluation]:
    """Create and enqueue the candidate's evaluation on each architecture (live ones by default).

    An evaluation that already exists for this harness version is not enqueued again.
    """
    if archs is None:
        archs = GpuWorker.objects.live_architectures()
    created = []
    for arch in archs:
        evaluation, is_new = Evaluation.objects.get_or_create(candidate=candidate, arch=arch, harness_version=HARNESS_VERSION)
        if is_new:
            enqueue(evaluation, priority=priority)
            created.append(evaluation)
    if not archs:
        logger.info("candidate %s saved with no live worker: nothing enqueued", candidate.pk)
    return created


def catch_up(arch: str, *, candidates=None) -> list[Evaluation]:
    """Evaluate on `arch` every listed candidate (or those given) that has no evaluation there yet."""
    if candidates is None:
        candidates = Candidate.objects.listed()
    evaluated = Evaluation.objects.filter(arch=arch, harness_version=HARNESS_VERSION).values("candidate")
    missing = candidates.exclude(pk__in=evaluated)
    evaluations = []
    for candidate in missing.iterator():
        with transaction.atomic():
            evaluations += fan_out(candidate, archs=[arch], priority=BULK)
    return evaluations


def candidate_saved(sender, instance: Candidate, created: bool, raw: bool = False, **kwargs) -> None:
    """post_save receiver: a new candidate is evaluated on every live architecture."""
    if created and not raw:
        priority = BULK if instance.origin == Candidate.Origin.IMPORT else INTERACTIVE
        fan_out(instance, priority=priority)


def reverification_requested_for(sender, candidates, **kwargs) -> None:
    """Receiver of kernels.signals.reverification_requested: evaluate again, on the bulk queues."""
    for candidate in candidates:
        with transaction.atomic():
            fan_out(candidate, priority=BULK)
