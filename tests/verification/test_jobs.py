"""The evaluation job end to end in this process: verdicts stored once, progress published in order."""

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from config.routing import websocket_urlpatterns
from court.models import Evaluation, OptimizationRun
from tests.court.factories import make_candidate, make_problem
from verification.actors import evaluate

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

STAGES = ["queued", "building", "checking", "timing", "done"]


def wait_for_verdict(broker, evaluation_id: int) -> Evaluation:
    broker.join("gpu.cpu", timeout=300_000)
    return Evaluation.objects.get(pk=evaluation_id)


def test_a_candidate_is_verified_by_the_cpu_worker(cpu_worker, broker):
    candidate = make_candidate(scale=2)
    evaluation = wait_for_verdict(broker, candidate.evaluations.get(arch="cpu").pk)
    assert evaluation.status == "verified", evaluation.reason
    assert evaluation.speedup_eager and evaluation.worker == cpu_worker.name
    assert evaluation.attempts == 1 and evaluation.stage == "done"
    job_seconds = (evaluation.finished_at - evaluation.started_at).total_seconds()
    assert 0 < evaluation.harness_seconds <= job_seconds


def test_a_job_delivered_again_after_its_verdict_does_nothing(cpu_worker, broker):
    candidate = make_candidate(scale=3)
    evaluation = wait_for_verdict(broker, candidate.evaluations.get(arch="cpu").pk)
    finished_at = evaluation.finished_at
    broker.enqueue(evaluate.message(evaluation.pk).copy(queue_name="gpu.cpu"))
    again = wait_for_verdict(broker, evaluation.pk)
    assert (again.attempts, again.finished_at, Evaluation.objects.count()) == (1, finished_at, 1)


async def test_progress_reaches_a_websocket_client_in_order(cpu_worker, broker):
    run = await sync_to_async(OptimizationRun.objects.create)(problem=await sync_to_async(make_problem)(scale=4))
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/runs/{run.pk}/")
    assert (await communicator.connect(timeout=10))[0]
    assert (await communicator.receive_json_from(timeout=10))["kind"] == "replayed"
    await sync_to_async(make_candidate)(problem=run.problem, scale=4, run=run, origin="model", round=1)
    stages = []
    while True:
        try:
            event = await communicator.receive_json_from(timeout=300)
        except TimeoutError:
            stored = await sync_to_async(lambda: list(Evaluation.objects.values_list("status", "stage")))()
            pytest.fail(f"no event for 300 s after stages {stages}; stored evaluations: {stored}")
        stages.append(event["stage"])
        if event["stage"] == "done":
            break
    await communicator.disconnect()
    assert event["status"] == "verified", event["reason"]
    positions = [STAGES.index(stage) for stage in stages]
    assert positions == sorted(positions), stages
    assert sorted(set(stages), key=STAGES.index) == ["queued", "building", "checking", "timing", "done"]


def test_a_worker_probes_its_device_after_an_evaluation_and_keeps_the_control(cpu_worker, broker, settings, tmp_path):
    # The probe runs a problem's own Model, no user code (one of the harness's short probes first, as the
    # device has no control of a short call yet): its A/A control is the device's.
    settings.DEVICE_PROBE_EVERY, settings.BASELINE_CACHE_DIR = 20, str(tmp_path)
    make_problem(scale=5, origin="kernelbench", level=1, task=1, degenerate=False)
    candidate = make_candidate(scale=3)

    evaluation = wait_for_verdict(broker, candidate.evaluations.get(arch="cpu").pk)

    assert evaluation.status == "verified", evaluation.reason
    kept = [line for path in tmp_path.glob("controls-*.jsonl") for line in path.read_text().splitlines()]
    assert len(kept) == 1  # due: the device had no controls yet
    assert "log_ratio" in kept[0]
