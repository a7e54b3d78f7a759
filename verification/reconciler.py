"""The reconciler's half for evaluations: every pending Evaluation has a job that will run it, or gets one.

A job can be lost between the row and the worker: the send after commit failed (Redis down), the
broker restarted without the message, the worker that held it died and nothing redelivers it. A
pending row past its grace period is looked at here: queued with a message the broker does not
hold, it is sent again; running on a worker whose heartbeat stopped, with no message left in the
broker to redeliver it, it is sent again, or failed once it has been started MAX_ATTEMPTS times.
A message a silent worker took (running, or prefetched behind the running one) counts as not held
(verification.queues.HeldMessages): the broker's clean-up would give it back only minutes later.
Each action is logged with its reason, and the reason a person reads is on the row.
"""

import logging
from collections.abc import Callable
from typing import TypeVar

from django.db import transaction
from django.db.models import Model, QuerySet
from django.utils import timezone

from court.models import Evaluation, ProofCheck
from verification import evaluations, liveness, proofs
from verification.models import GpuWorker
from verification.queues import HeldMessages

M = TypeVar("M", bound=Model)

logger = logging.getLogger(__name__)


def grace():
    """A row sent less than this long ago may not have reached the broker yet (sends go after
    commit); the runs' half (inference.runs) waits as long."""
    return liveness.silence()


def reconcile_evaluations(*, now=None) -> dict[int, str]:
    """Send again, or fail, the pending evaluations nothing will run; returns what was done, by id."""
    now = now or timezone.now()
    live_workers = _live_workers(now)
    since = now - grace()
    stale = Evaluation.objects.filter(status__in=Evaluation.PENDING, created_at__lt=since).exclude(enqueued_at__gte=since)
    held = HeldMessages()
    return reconcile_each(stale.select_related("candidate"), lambda evaluation: _reconcile(evaluation, live_workers, held))


def _live_workers(now) -> dict:
    # A worker's name is its slot: a process restarted in the slot is live under the same name,
    # but its start says it is not the process that claimed what was running there before.
    return dict(GpuWorker.objects.live(now=now).values_list("name", "started_at"))


def reconcile_each(rows: QuerySet[M], act: Callable[[M], str | None]) -> dict[int, str]:
    """`act` on each of `rows` in a transaction of its own, the row locked and read again (one
    another pass holds is skipped, one that left `rows` meanwhile too); what it did is logged and
    returned, by id."""
    done = {}
    for pk in rows.values_list("pk", flat=True):
        with transaction.atomic():
            row = rows.select_for_update(skip_locked=True).filter(pk=pk).first()
            if row is None:
                continue
            action = act(row)
            if action:
                done[pk] = action
                logger.warning("%s %s: %s", rows.model._meta.model_name, pk, action)
    return done


def _reconcile(evaluation: Evaluation, live_workers: dict, held: HeldMessages) -> str | None:
    if evaluation.status == Evaluation.Status.QUEUED:
        if not evaluations.is_lost(evaluation, held):
            return None
        evaluations.send(evaluation)
        return "sent again: the broker no longer held its job"
    if _under_way(evaluation, live_workers, held):
        return None
    if evaluation.attempts >= evaluations.MAX_ATTEMPTS:
        evaluations.fail(
            evaluation,
            f"The worker stopped {evaluation.attempts} times while evaluating this candidate; "
            "it was not run again. Staff can re-verify it.",
        )
        return "failed: its workers stopped too many times"
    evaluations.send(evaluation)
    return f"sent again: its worker {evaluation.worker or '(unknown)'} stopped and its job was lost"


def _under_way(row: Evaluation | ProofCheck, live_workers: dict, held: HeldMessages) -> bool:
    """Started by a worker still live that has not restarted since (it runs the job, or its time
    limit ends it), or with its message still in the broker (waiting, or to be given back to
    another worker once its own stopped beating)."""
    started = live_workers.get(row.worker)
    if started is not None and row.started_at is not None and started <= row.started_at:
        return True
    return bool(row.message_id and row.queue and held.holds(row.queue, row.message_id))


def reconcile_proof_checks(*, now=None) -> dict[int, str]:
    """Send again, or fail, the proof checks nothing will run (a hack report's evidence must not
    wait for ever); returns what was done, by id."""
    now = now or timezone.now()
    live_workers = _live_workers(now)
    since = now - grace()
    stale = ProofCheck.objects.filter(status=ProofCheck.Status.QUEUED, created_at__lt=since).exclude(enqueued_at__gte=since)
    held = HeldMessages()
    return reconcile_each(stale.select_related("report__candidate"), lambda check: _reconcile_proof(check, live_workers, held))


def _reconcile_proof(check: ProofCheck, live_workers: dict, held: HeldMessages) -> str | None:
    if _under_way(check, live_workers, held):
        return None
    if check.attempts >= evaluations.MAX_ATTEMPTS:
        proofs.record_proof_verdict(check, proofs.stopped_too_often(check.attempts))
        return "failed: its workers stopped too many times"
    proofs.send(check)
    return "sent again: the broker no longer held its job"
