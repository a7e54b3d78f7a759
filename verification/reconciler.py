"""The reconciler's evaluations and proof checks (jobrows.reconciler, registered in
verification.apps): every pending Evaluation and proof check has a job that will run it, or gets one.

A job can be lost between the row and the worker: the send after commit failed (Redis down), the
broker restarted without the message, the worker that held it died and nothing redelivers it. A
pending row past its grace period is looked at here: queued with a message the broker does not
hold, it is sent again; running on a worker whose heartbeat stopped, with no message left in the
broker to redeliver it, it is sent again, or failed once it has been started MAX_ATTEMPTS times.
A message a silent worker took (running, or prefetched behind the running one) counts as not held
(jobrows.messages.HeldMessages): the broker's clean-up would give it back only minutes later.
Each action is logged with its reason, and the reason a person reads is on the row.
"""

from django.utils import timezone

from court.models import Evaluation, ProofCheck
from jobrows.messages import HeldMessages
from jobrows.reconciler import past_grace, reconcile_each
from verification import evaluations, proofs
from verification.models import GpuWorker


def reconcile_evaluations(*, now=None) -> dict[int, str]:
    """Send again, or fail, the pending evaluations nothing will run; returns what was done, by id."""
    now = now or timezone.now()
    live_workers = _live_workers(now)
    stale = past_grace(Evaluation.objects.filter(status__in=Evaluation.PENDING), now)
    held = HeldMessages()
    return reconcile_each(stale.select_related("candidate"), lambda evaluation: _reconcile(evaluation, live_workers, held))


def _live_workers(now) -> dict:
    # A worker's name is its slot: a process restarted in the slot is live under the same name,
    # but its start says it is not the process that claimed what was running there before.
    return dict(GpuWorker.objects.live(now=now).values_list("name", "started_at"))


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
    return held.holds_job_of(row)


def reconcile_proof_checks(*, now=None) -> dict[int, str]:
    """Send again, or fail, the proof checks nothing will run (a hack report's evidence must not
    wait for ever); returns what was done, by id."""
    now = now or timezone.now()
    live_workers = _live_workers(now)
    stale = past_grace(ProofCheck.objects.filter(status=ProofCheck.Status.QUEUED), now)
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
