"""Re-verification after a harness change: listed kernels get a verdict of the current harness.

The leaderboard shows only evaluations of the current HARNESS_VERSION, so a new version empties it
until its kernels are evaluated again. Each listed kernel verified on an architecture under an
older harness, with no evaluation of the current one there, gets that evaluation on the
architecture's bulk queue. Fan-out never enqueues an evaluation that exists, so running this again
enqueues nothing new.
"""

import dramatiq
from django.db import transaction
from dramatiq.brokers.stub import StubBroker

from court.curation import audit
from court.models import Candidate
from court.selectors import outdated_kernels
from evaluation.harness import HARNESS_VERSION
from verification.fanout import fan_out
from verification.queues import BULK


def broker_is_in_process() -> bool:
    """Embedded mode's broker lives in one process: jobs another process enqueues there are lost."""
    return isinstance(dramatiq.get_broker(), StubBroker)


def reverify_outdated(*, arch: str | None = None, dry_run: bool = False, by=None) -> dict[str, list[Candidate]]:
    """Enqueue (unless `dry_run`) what `outdated_kernels` lists, on `arch` or on every architecture."""
    plan = outdated_kernels(arch=arch)
    if dry_run:
        return plan
    for where, kernels in plan.items():
        for kernel in kernels:
            with transaction.atomic():
                fan_out(kernel, archs=[where], priority=BULK)
                audit(
                    actor=by,
                    action="kernel re-verification",
                    target=kernel,
                    detail=f"no verdict of harness {HARNESS_VERSION} on {where}",
                )
    return plan
