"""The reconciler's runs: a run no loop works on is resumed, cancelled or failed with a reason."""

from datetime import timedelta

import pytest
from django.utils import timezone

from court.models import OptimizationRun, RunEvent
from inference import actors, runs
from inference import transcript as transcript_module
from inference.queues import INFERENCE_QUEUE
from inference.services import start_run
from inference.transcript import Transcript
from tests.court.factories import CANDIDATE_SOURCE, make_evaluation, make_problem
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


def test_a_resumed_round_waits_for_the_candidate_its_dead_loop_made(broker, monkeypatch):
    """Its candidate is the round's, whatever the backend would write if asked again (the builtin
    optimizer and any sampled model write different code each time): it is not asked."""
    run = started(broker)
    dead_loop = Transcript(run)
    [made] = actors._save_candidate(run, dead_loop, 1, CANDIDATE_SOURCE.format(scale=2))
    make_evaluation(made)
    transcript_module.writer.flush()
    monkeypatch.setattr(actors, "_generate", lambda *args: pytest.fail("the backend was asked again"))

    actors._round(run, Transcript(run), 1)

    transcript_module.writer.flush()
    assert list(run.candidates.all()) == [made]
    kinds = list(run.events.order_by("seq").values_list("kind", flat=True))
    assert kinds == [RunEvent.Kind.CANDIDATE, RunEvent.Kind.STATUS, RunEvent.Kind.VERDICTS]
    assert run.events.get(kind=RunEvent.Kind.VERDICTS).data["candidate"] == made.pk


def test_a_round_someone_else_decided_keeps_its_candidate(broker):
    """Two loops answering one round (the first one's database came back after the second began):
    the first candidate recorded is the round's, the second answer is not used."""
    run = started(broker)
    [first] = actors._save_candidate(run, Transcript(run), 1, CANDIDATE_SOURCE.format(scale=2))

    assert actors._save_candidate(run, Transcript(run), 1, CANDIDATE_SOURCE.format(scale=3)) == [first]
    assert actors._save_candidate(run, Transcript(run), 2, CANDIDATE_SOURCE.format(scale=2)) == []  # a later round repeating it
    assert list(run.candidates.all()) == [first]


def test_a_loop_whose_run_names_another_job_makes_no_candidate(broker):
    run = started(broker)
    runs.send(OptimizationRun.objects.get(pk=run.pk))  # the reconciler's new job

    with pytest.raises(runs.Superseded):
        actors._save_candidate(run, Transcript(run), 1, CANDIDATE_SOURCE.format(scale=2))
    assert not run.candidates.exists()
