"""The reconciler's runs: a run no loop works on is resumed, cancelled or failed with a reason."""

from datetime import timedelta

import pytest
from django.utils import timezone

from court.models import OptimizationRun
from inference import runs
from inference.queues import INFERENCE_QUEUE
from inference.services import start_run
from tests.court.factories import make_problem
from tests.verification.test_fanout import pending

pytestmark = pytest.mark.django_db(transaction=True)


def later(minutes: float = 5):
    return timezone.now() + timedelta(minutes=minutes)


def started(broker) -> OptimizationRun:
    broker.declare_queue(INFERENCE_QUEUE)
    return start_run(problem=make_problem(), backend="builtin")


def silent(run: OptimizationRun, *, attempts: int = 1, **fields) -> OptimizationRun:
    """As a loop that claimed the run and then died with its process (and its job) leaves it."""
    OptimizationRun.objects.filter(pk=run.pk).update(status="running", attempts=attempts, heartbeat_at=timezone.now(), **fields)
    return OptimizationRun.objects.get(pk=run.pk)


def test_a_run_whose_job_the_broker_lost_is_sent_again(broker):
    run = started(broker)
    broker.flush_all()

    assert runs.reconcile_runs(now=later()) == {run.pk: "sent again: no loop was running it"}
    assert OptimizationRun.objects.get(pk=run.pk).message_id != run.message_id
    assert pending(broker, INFERENCE_QUEUE) == 1


def test_a_run_waiting_in_the_broker_is_left_alone(broker):
    started(broker)

    assert runs.reconcile_runs(now=later()) == {}


def test_a_run_whose_loop_went_silent_is_resumed_by_a_new_job(broker):
    run = started(broker)
    broker.flush_all()
    silent(run)

    assert runs.reconcile_runs(now=later(0.5)) == {}  # beating recently enough
    assert list(runs.reconcile_runs(now=later())) == [run.pk]
    assert pending(broker, INFERENCE_QUEUE) == 1


def test_a_silent_run_someone_asked_to_stop_is_cancelled(broker):
    run = started(broker)
    broker.flush_all()
    silent(run, cancel_requested_at=timezone.now())

    runs.reconcile_runs(now=later())

    ended = OptimizationRun.objects.get(pk=run.pk)
    assert ended.status == "cancelled" and ended.finished_at is not None
    assert ended.events.last().data["status"] == "cancelled"


def test_a_run_whose_loops_keep_dying_fails_with_a_reason(broker):
    run = started(broker)
    broker.flush_all()
    silent(run, attempts=runs.MAX_ATTEMPTS)

    runs.reconcile_runs(now=later())

    ended = OptimizationRun.objects.get(pk=run.pk)
    assert ended.status == "failed" and "stopped 3 times" in ended.error
    assert pending(broker, INFERENCE_QUEUE) == 0


def test_a_loop_stops_once_its_run_names_another_job(broker):
    run = started(broker)
    beats = runs.Heartbeats()
    with beats.beating(run, run.message_id):
        beats.beat()
        assert not beats.superseded(run.pk)
        runs.send(OptimizationRun.objects.get(pk=run.pk))  # the reconciler's new job
        beats.beat()
        assert beats.superseded(run.pk)


def test_an_old_message_finds_nothing_to_do(broker):
    run = started(broker)
    replaced = OptimizationRun.objects.get(pk=run.pk)
    runs.send(replaced)

    assert runs.claim(run.pk, message_id=run.message_id) is None
    assert runs.claim(run.pk, message_id=replaced.message_id).attempts == 1


def test_a_run_the_broker_refuses_is_still_started(broker, monkeypatch):
    def refuse(message, *, delay=None):
        raise ConnectionError("Redis is down")

    monkeypatch.setattr(broker, "enqueue", refuse)
    run = started(broker)  # no 500 for the visitor: the run is saved, its job sent later
    monkeypatch.undo()

    assert OptimizationRun.objects.get(pk=run.pk).status == "queued"
    assert list(runs.reconcile_runs(now=later())) == [run.pk]
    assert pending(broker, INFERENCE_QUEUE) == 1


def test_a_resumed_round_waits_for_the_candidate_its_dead_loop_made(broker):
    from court.models import RunEvent
    from inference import transcript as transcript_module
    from inference.actors import _save_candidate
    from inference.transcript import Transcript
    from tests.court.factories import CANDIDATE_SOURCE

    run = started(broker)
    dead_loop, resumed = Transcript(run), Transcript(run)
    made = _save_candidate(run, dead_loop, 1, CANDIDATE_SOURCE.format(scale=2))
    transcript_module.writer.flush()

    assert _save_candidate(run, resumed, 1, CANDIDATE_SOURCE.format(scale=2)) == made  # the same round, again
    assert _save_candidate(run, resumed, 2, CANDIDATE_SOURCE.format(scale=2)) is None  # a later round repeating it
    transcript_module.writer.flush()
    kinds = list(run.events.order_by("seq").values_list("kind", flat=True))
    assert kinds == [RunEvent.Kind.CANDIDATE, RunEvent.Kind.NO_CANDIDATE]
