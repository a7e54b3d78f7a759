"""A run's job, from outside its loop: sent, claimed, kept alive by heartbeats, found dead, resumed.

A run is a job row (jobrows), as an Evaluation is: it names the one job message that may run it,
recorded on the row before the row commits and sent after; a message that is not the run's does
nothing. A running loop beats (`heartbeat_at`) every `liveness.interval()` from a thread of its
process, and only while the run still names its message: once it does not (the reconciler sent a
new one), the loop stops without writing anything more. So at most one loop works on a run, and a
run whose loop died is found by its silence (`reconcile_runs`, registered with the reconciler in
inference.apps) and resumed from its last completed round, or ended with a reason after
MAX_ATTEMPTS loops.
"""

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import OperationalError, close_old_connections, transaction
from django.utils import timezone

from court.models import OptimizationRun
from inference.queues import INFERENCE_QUEUE
from inference.transcript import Transcript
from jobrows import liveness, messages
from jobrows.messages import HeldMessages
from jobrows.reconciler import past_grace, reconcile_each

logger = logging.getLogger(__name__)

RUN_ACTOR = "run_optimization"
# Loops started on one run before it is failed: a run that kills its worker each time stops there.
MAX_ATTEMPTS = 3


class Superseded(Exception):
    """The run names another message now: this loop must stop and write nothing more."""


def send(run: OptimizationRun) -> None:
    """Record a new job message on the run and send it once the row is committed. A broker that
    cannot take it is logged, not raised: the reconciler sends it again."""
    run.heartbeat_at = None
    messages.send(run, messages.job_message(INFERENCE_QUEUE, RUN_ACTOR, run.pk), also=["heartbeat_at"])


def claim(run_id: int, *, message_id: str | None) -> OptimizationRun | None:
    """The run, for this message's loop to work on; None when there is nothing for it to do."""
    with transaction.atomic():
        run = OptimizationRun.objects.select_for_update().select_related("problem").get(pk=run_id)
        if run.is_finished:
            return None
        if not messages.may_run(run, message_id):
            return None
        if run.attempts >= MAX_ATTEMPTS:
            finish(run, OptimizationRun.Status.FAILED, error=_stopped_too_often(run))
            return None
        run.heartbeat_at = timezone.now()
        messages.start(run, also=["heartbeat_at"])
    return run


def queued_wait(run: OptimizationRun) -> str:
    """What a queued run waits for, for its page: the runs the inference workers took before it and
    those sent before it, which they take first; empty once it has started."""
    if run.status != OptimizationRun.Status.QUEUED:
        return ""
    unfinished = OptimizationRun.objects.exclude(status__in=OptimizationRun.FINISHED).exclude(pk=run.pk)
    running = unfinished.exclude(status=OptimizationRun.Status.QUEUED).count()
    ahead = unfinished.filter(status=OptimizationRun.Status.QUEUED, created_at__lt=run.created_at).count()
    line = f"Waiting for a free model loop: {running} run{'s' if running != 1 else ''} running"
    if ahead:
        line += f", {ahead} queued before it"
    return line + ". It starts when the inference workers have taken those."


def _stopped_too_often(run: OptimizationRun) -> str:
    return f"The run's worker stopped {run.attempts} times while running it; it was not resumed. Start it again."


def finish(run: OptimizationRun, status: str, *, error: str = "") -> None:
    """End a run from outside its loop (the reconciler, a claim past its attempts)."""
    run.status, run.error, run.finished_at = status, error, timezone.now()
    Transcript(run).status(
        round=run.rounds_completed, save_run=lambda: run.save(update_fields=["status", "error", "finished_at"])
    )


class Heartbeats:
    """Beats for every run this process's loops work on, in one thread; tells a loop when its run
    names another message."""

    def __init__(self):
        self._beating: dict[int, str | None] = {}  # run id -> the loop's message id
        self._superseded: set[int] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextmanager
    def beating(self, run: OptimizationRun, message_id: str | None) -> Iterator[None]:
        with self._lock:
            self._beating[run.pk] = message_id
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="run heartbeats", daemon=True)
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._beating.pop(run.pk, None)
                self._superseded.discard(run.pk)

    def superseded(self, run_id: int) -> bool:
        return run_id in self._superseded

    def beat(self) -> None:
        with self._lock:
            beating = dict(self._beating)
        now = timezone.now()
        for run_id, message_id in beating.items():
            runs = OptimizationRun.objects.filter(pk=run_id)
            if message_id is not None:
                runs = runs.filter(message_id=message_id)
            if not runs.update(heartbeat_at=now):
                logger.warning("run %s names another job now; its loop here stops", run_id)
                with self._lock:
                    self._superseded.add(run_id)

    def _run(self) -> None:
        while True:
            every_s = liveness.interval().total_seconds()
            time.sleep(every_s)
            try:
                close_old_connections()
                self.beat()
            except OperationalError as error:
                logger.error(
                    "could not record the runs' heartbeats, the database is unreachable (%s); trying again in %s s",
                    error,
                    every_s,
                )
            except Exception:
                logger.exception("could not record the runs' heartbeats; trying again in %s s", every_s)


heartbeats = Heartbeats()


def reconcile_runs(*, now=None) -> dict[int, str]:
    """Resume, or end, the unfinished runs no loop works on; returns what was done, by id."""
    now = now or timezone.now()
    unfinished = past_grace(OptimizationRun.objects.exclude(status__in=OptimizationRun.FINISHED), now)
    held = HeldMessages()
    return reconcile_each(unfinished, lambda run: _reconcile(run, now, held))


def _reconcile(run: OptimizationRun, now, held: HeldMessages) -> str | None:
    if run.heartbeat_at is not None and run.heartbeat_at >= now - liveness.silence():
        return None
    if held.holds_job_of(run, queue=INFERENCE_QUEUE):
        return None  # waiting for a loop, or given back by the broker after its worker died
    if run.cancel_requested_at is not None:
        finish(run, OptimizationRun.Status.CANCELLED)
        return "cancelled: asked to stop, and no loop was running it"
    if run.attempts >= MAX_ATTEMPTS:
        finish(run, OptimizationRun.Status.FAILED, error=_stopped_too_often(run))
        return "failed: its loops stopped too many times"
    send(run)
    return "sent again: no loop was running it"
