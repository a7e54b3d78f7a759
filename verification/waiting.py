"""What a queued evaluation waits for: its architecture's workers, and the jobs they take first.

Each worker runs one job at a time and takes its architecture's interactive queue (`gpu.<arch>`:
runs, pasted candidates, proof checks) before the bulk one (re-verification, catch-up), each in
the order sent. So the jobs ahead of a queued evaluation are those running on its architecture and
those queued before it, on its queue or on the interactive queue when it is bulk. A person watching
a run reads this beside the word "queued" (inference's run page).
"""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from court.models import Evaluation, ProofCheck
from verification.models import GpuWorker
from verification.queues import INTERACTIVE, priority_of, queue_for


@dataclass(frozen=True)
class Wait:
    arch: str
    running: int  # jobs running on the architecture now
    queued_ahead: int  # jobs sent before it that will start before it
    workers: int  # live workers of the architecture
    running_since: datetime | None  # when the longest-running of those jobs started

    @property
    def place(self) -> int:
        """1 when it is the next job a free worker takes."""
        return self.queued_ahead + 1

    def sentence(self, *, now: datetime | None = None) -> str:
        if not self.workers:
            return (
                f"Waiting for a {self.arch} worker: none is running now. It is verified when one starts; "
                "nothing is lost meanwhile."
            )
        workers = f"the only {self.arch} worker" if self.workers == 1 else f"{self.workers} {self.arch} workers"
        if self.queued_ahead:
            line = f"{self.queued_ahead} job{'s' if self.queued_ahead != 1 else ''} ahead in the queue for {workers}"
        else:
            line = f"Next in line for {workers}"
        if self.running >= self.workers:
            busy = "busy" if self.workers == 1 else "all busy"
            line += f" ({busy}: {self.running} running"
            if self.running_since is not None:
                line += f", the longest for {_duration((now or timezone.now()) - self.running_since)}"
            line += ")"
        return line + "."


def _duration(span) -> str:
    seconds = max(0, int(span.total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def waits_for(evaluations) -> dict[int, Wait]:
    """The wait of each queued evaluation among `evaluations`, by id; others are left out."""
    queued = [e for e in evaluations if e.status == Evaluation.Status.QUEUED]
    waits = {}
    for arch in sorted({e.arch for e in queued}):
        running_evaluations = Evaluation.objects.filter(arch=arch, status=Evaluation.Status.RUNNING)
        running_checks = ProofCheck.objects.filter(arch=arch, status=ProofCheck.Status.QUEUED, started_at__isnull=False)
        started = list(running_evaluations.values_list("started_at", flat=True)) + list(
            running_checks.values_list("started_at", flat=True)
        )
        workers = GpuWorker.objects.live().filter(arch=arch).count()
        for evaluation in (e for e in queued if e.arch == arch):
            waits[evaluation.pk] = Wait(
                arch=arch,
                running=len(started),
                queued_ahead=_queued_ahead(evaluation),
                workers=workers,
                running_since=min((s for s in started if s is not None), default=None),
            )
    return waits


def _queued_ahead(evaluation: Evaluation) -> int:
    """Jobs of the evaluation's architecture sent before it (or on the interactive queue, when it is
    bulk) and not started yet."""
    interactive = queue_for(evaluation.arch)
    sent_at = evaluation.enqueued_at or timezone.now()
    before = Q(queue=evaluation.queue or interactive, enqueued_at__lt=sent_at)
    if priority_of(evaluation.queue) != INTERACTIVE and evaluation.queue:
        before |= Q(queue=interactive)
    evaluations = Evaluation.objects.filter(before, status=Evaluation.Status.QUEUED).exclude(pk=evaluation.pk)
    checks = ProofCheck.objects.filter(before, status=ProofCheck.Status.QUEUED, started_at__isnull=True)
    return evaluations.count() + checks.count()
