"""What the jobs app does when the domain (court.signals) asks for work: the app's only receivers.

The domain app (court) may not import this one, so its requests arrive by signal; each receiver here
creates or re-opens the rows inside the sender's transaction, and the jobs go out when it commits.
"""

from court.models import Candidate
from verification import evaluations
from verification.fanout import fan_out
from verification.models import GpuWorker
from verification.proofs import enqueue_proof_checks
from verification.queues import BULK, INTERACTIVE


def candidate_created(sender, candidate: Candidate, **kwargs) -> None:
    """A new candidate is evaluated on every live architecture; imports on the bulk queues."""
    fan_out(candidate, priority=BULK if candidate.origin == Candidate.Origin.IMPORT else INTERACTIVE)


def reverification_requested(sender, candidates, **kwargs) -> None:
    """Evaluate again on every live architecture, on the bulk queues (queued ones sent anew)."""
    evaluations.reopen(candidates, archs=GpuWorker.objects.live_architectures(), priority=BULK)


def proof_check_requested(sender, report, archs: list[str], **kwargs) -> None:
    enqueue_proof_checks(report, archs)
