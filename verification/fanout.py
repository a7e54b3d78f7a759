"""Fan-out: one evaluation job per live architecture for each new candidate.

An architecture is live while one of its workers has a fresh heartbeat. A candidate saved while
an architecture is offline is evaluated there when staff ask it to catch up.
"""

import logging

from django.db import transaction

from court.models import Candidate, Evaluation
from evaluation.harness import HARNESS_VERSION
from jobrows.messages import HeldMessages
from verification import evaluations
from verification.models import GpuWorker
from verification.queues import BULK, INTERACTIVE

logger = logging.getLogger(__name__)


def fan_out(candidate: Candidate, *, archs: list[str] | None = None, priority: str = INTERACTIVE) -> list[Evaluation]:
    """Create and send the candidate's evaluation on each architecture (live ones by default).

    An evaluation that already exists for this harness version is not sent again.
    """
    if archs is None:
        archs = GpuWorker.objects.live_architectures()
    if not archs:
        logger.info("candidate %s saved with no live worker: nothing enqueued", candidate.pk)
    return evaluations.open_evaluations(candidate, archs, priority=priority)


def catch_up(arch: str, *, candidates=None) -> list[Evaluation]:
    """Evaluate on `arch` every listed candidate (or those given) that has no evaluation there yet,
    and send again those whose evaluation there is queued with a message the broker lost."""
    if candidates is None:
        candidates = Candidate.objects.listed()
    evaluated = Evaluation.objects.filter(arch=arch, harness_version=HARNESS_VERSION)
    missing = candidates.exclude(pk__in=evaluated.values("candidate"))
    sent = []
    for candidate in missing.iterator():
        with transaction.atomic():
            sent += fan_out(candidate, archs=[arch], priority=BULK)
    held = HeldMessages()
    for evaluation in evaluated.filter(candidate__in=candidates, status=Evaluation.Status.QUEUED).iterator():
        if evaluations.is_lost(evaluation, held):
            with transaction.atomic():
                evaluations.send(evaluation, priority=BULK)
                sent.append(evaluation)
    return sent
