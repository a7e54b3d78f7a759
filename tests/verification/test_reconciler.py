"""The reconciler's evaluations: a pending row nothing will run is sent again, or failed with a reason."""

import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from court.curation import request_reverification
from court.models import Evaluation, HackReport, ProofCheck
from jobrows import liveness
from tests.court.factories import make_candidate
from tests.verification.conftest import register
from tests.verification.test_fanout import pending
from verification import evaluations, proofs
from verification.models import GpuWorker
from verification.reconciler import reconcile_evaluations, reconcile_proof_checks

pytestmark = pytest.mark.django_db(transaction=True)


def later(minutes: float = 5):
    return timezone.now() + timedelta(minutes=minutes)


def queued_on_h100() -> Evaluation:
    register("h100")
    return make_candidate().evaluations.get(arch="h100")


def running_on(evaluation: Evaluation, worker_name: str, *, attempts: int = 1) -> Evaluation:
    Evaluation.objects.filter(pk=evaluation.pk).update(
        status="running", stage="timing", worker=worker_name, attempts=attempts, started_at=timezone.now()
    )
    return Evaluation.objects.get(pk=evaluation.pk)


def test_a_queued_evaluation_whose_job_the_broker_lost_is_sent_again(broker):
    evaluation = queued_on_h100()
    broker.flush_all()  # as a Redis restart without persistence does

    done = reconcile_evaluations(now=later())

    assert done == {evaluation.pk: "sent again: the broker no longer held its job"}
    again = Evaluation.objects.get(pk=evaluation.pk)
    assert again.status == "queued" and again.message_id != evaluation.message_id
    assert pending(broker, "gpu.h100") == 1


def test_a_queued_evaluation_the_broker_holds_is_left_alone(broker):
    evaluation = queued_on_h100()

    assert reconcile_evaluations(now=later()) == {}
    assert Evaluation.objects.get(pk=evaluation.pk).message_id == evaluation.message_id
    assert pending(broker, "gpu.h100") == 1


def test_a_row_within_its_grace_period_is_left_alone(broker):
    queued_on_h100()
    broker.flush_all()

    assert reconcile_evaluations() == {}


def test_a_running_evaluation_on_a_live_worker_is_left_alone(broker):
    evaluation = queued_on_h100()
    broker.flush_all()
    running_on(evaluation, "test-host:h100:0")
    at = later(0.5) + timedelta(seconds=40)
    GpuWorker.objects.filter(name="test-host:h100:0").update(last_heartbeat=at)  # it kept beating

    assert reconcile_evaluations(now=at) == {}


def test_a_running_evaluation_whose_worker_stopped_is_sent_again(broker):
    evaluation = queued_on_h100()
    broker.flush_all()
    register("h100-dead", age_seconds=600)
    running_on(evaluation, "test-host:h100-dead:0")

    done = reconcile_evaluations(now=later())

    assert done == {evaluation.pk: "sent again: its worker test-host:h100-dead:0 stopped and its job was lost"}
    assert Evaluation.objects.get(pk=evaluation.pk).status == "queued"
    assert pending(broker, "gpu.h100") == 1


def test_a_worker_restarted_in_the_same_slot_does_not_vouch_for_the_old_claim(broker):
    evaluation = queued_on_h100()
    broker.flush_all()
    running_on(evaluation, "test-host:h100:0")
    GpuWorker.objects.filter(name="test-host:h100:0").update(started_at=timezone.now() + timedelta(seconds=1))

    assert list(reconcile_evaluations(now=later())) == [evaluation.pk]


def test_an_evaluation_whose_workers_keep_stopping_fails_with_a_reason(broker):
    evaluation = queued_on_h100()
    broker.flush_all()
    register("h100-dead", age_seconds=600)
    running_on(evaluation, "test-host:h100-dead:0", attempts=evaluations.MAX_ATTEMPTS)

    reconcile_evaluations(now=later())

    failed = Evaluation.objects.get(pk=evaluation.pk)
    assert failed.status == "failed" and "stopped 5 times" in failed.reason
    assert pending(broker, "gpu.h100") == 0


def test_the_replaced_message_does_nothing_and_the_new_one_runs(broker):
    evaluation = queued_on_h100()
    broker.flush_all()
    reconcile_evaluations(now=later())
    new_message = Evaluation.objects.get(pk=evaluation.pk).message_id

    assert evaluations.claim(evaluation.pk, worker="w", arch="h100", message_id=evaluation.message_id) is None
    claimed = evaluations.claim(evaluation.pk, worker="w", arch="h100", message_id=new_message)
    assert claimed is not None and claimed.status == "running" and claimed.attempts == 1


def test_staff_re_verification_sends_a_lost_queued_evaluation_again(broker):
    evaluation = queued_on_h100()
    broker.flush_all()

    request_reverification(candidates=[evaluation.candidate])

    assert Evaluation.objects.filter(candidate=evaluation.candidate).count() == 1
    assert pending(broker, "gpu.h100.bulk") == 1
    assert Evaluation.objects.get(pk=evaluation.pk).queue == "gpu.h100.bulk"


def test_a_send_the_broker_refuses_leaves_the_row_queued_for_the_reconciler(broker, monkeypatch):
    def refuse(message, *, delay=None):
        raise ConnectionError("Redis is down")

    monkeypatch.setattr(broker, "enqueue", refuse)
    evaluation = queued_on_h100()  # the candidate is saved; its job could not be sent
    monkeypatch.undo()

    assert Evaluation.objects.get(pk=evaluation.pk).status == "queued"
    assert list(reconcile_evaluations(now=later())) == [evaluation.pk]
    assert pending(broker, "gpu.h100") == 1


def reported_on_cpu() -> ProofCheck:
    """A report's proof check on cpu, sent as filing a report sends it."""
    register("cpu")
    report = HackReport.objects.create(candidate=make_candidate(), category="caching", text="caches", proof_code="x")
    with transaction.atomic():
        [check] = proofs.enqueue_proof_checks(report, ["cpu"])
    return ProofCheck.objects.get(pk=check.pk)


def test_a_proof_check_whose_job_the_broker_lost_is_sent_again(broker):
    check = reported_on_cpu()
    assert reconcile_proof_checks(now=later()) == {}  # the broker holds it
    broker.flush_all()

    assert reconcile_proof_checks(now=later()) == {check.pk: "sent again: the broker no longer held its job"}
    again = ProofCheck.objects.get(pk=check.pk)
    assert again.status == "queued" and again.message_id != check.message_id
    assert pending(broker, "gpu.cpu") == 1
    assert proofs.claim(check.pk, message_id=check.message_id) is None  # the lost message, if it surfaces


def test_a_proof_check_under_way_on_a_live_worker_is_left_alone(broker):
    check = reported_on_cpu()
    broker.flush_all()  # taken by its worker: the broker's copy goes away only on acknowledgement, but say it did
    at = later()
    ProofCheck.objects.filter(pk=check.pk).update(attempts=1, worker="test-host:cpu:0", started_at=timezone.now())
    GpuWorker.objects.filter(name="test-host:cpu:0").update(last_heartbeat=at)  # it kept beating

    assert reconcile_proof_checks(now=at) == {}


def test_a_proof_check_whose_workers_keep_dying_fails_with_a_reason(broker):
    check = reported_on_cpu()
    broker.flush_all()
    ProofCheck.objects.filter(pk=check.pk).update(
        attempts=evaluations.MAX_ATTEMPTS, worker="gone:cpu:1", started_at=timezone.now()
    )

    assert reconcile_proof_checks(now=later()) == {check.pk: "failed: its workers stopped too many times"}
    failed = ProofCheck.objects.get(pk=check.pk)
    assert failed.status == "failed" and "stopped 5 times" in failed.reason
    assert pending(broker, "gpu.cpu") == 0


def taken_by_a_worker(broker, queue: str):
    """The queue's messages fetched by a consumer, as a worker's prefetch takes its job and the
    next one; the consumer's process tells the broker it is alive on each fetch."""
    from dramatiq.brokers.redis import RedisBroker

    if not isinstance(broker, RedisBroker):
        pytest.skip("what a worker took is read from Redis's layout (the in-process broker hides it)")
    consumer = broker.consume(queue, prefetch=2, timeout=100)
    taken = [next(consumer) for _ in range(2)]
    assert all(taken), taken
    return consumer


def silent_since(broker, seconds: float) -> None:
    """The consumer's process last told the broker it was alive `seconds` ago."""
    last_beat_ms = int((time.time() - seconds) * 1000)
    broker.client.zadd(f"{broker.namespace}:__heartbeats__", {broker.broker_id: last_beat_ms})


def test_jobs_a_silent_worker_took_are_sent_again_without_waiting_for_the_broker(broker):
    register("h100-dead", age_seconds=600)
    running = queued_on_h100()
    prefetched = make_candidate(scale=3).evaluations.get(arch="h100")
    running = running_on(running, "test-host:h100-dead:0")
    taken_by_a_worker(broker, "gpu.h100")
    silent_since(broker, 5)
    assert reconcile_evaluations(now=later()) == {}  # silent, not yet for long

    silent_since(broker, liveness.silence().total_seconds() + 1)
    done = reconcile_evaluations(now=later())

    assert done == {
        running.pk: "sent again: its worker test-host:h100-dead:0 stopped and its job was lost",
        prefetched.pk: "sent again: the broker no longer held its job",
    }
    assert Evaluation.objects.get(pk=running.pk).attempts == 1  # its start is counted
