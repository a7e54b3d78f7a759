"""What a round waits for once its candidate is made: no worker at all is said at once, and a cancel
during the wait ends the run cancelled."""

import time

import pytest
from django.utils import timezone

from court.models import OptimizationRun, RunEvent
from inference import actors
from inference import transcript as transcript_module
from inference.queues import INFERENCE_QUEUE
from inference.services import start_run
from inference.transcript import Transcript
from tests.court.factories import CANDIDATE_SOURCE, make_problem
from tests.verification.conftest import register

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = f"Here it is.\n```python\n{CANDIDATE_SOURCE.format(scale=2)}```\n"


@pytest.fixture
def run(broker, monkeypatch) -> OptimizationRun:
    """A run whose model answers with a candidate at once."""
    broker.declare_queue(INFERENCE_QUEUE)
    monkeypatch.setattr(actors, "_generate", lambda *args: ANSWER)
    return start_run(problem=make_problem(), backend="builtin")


def test_a_round_with_no_live_worker_anywhere_says_so_at_once(run, settings):
    settings.INFERENCE_VERDICT_WAIT_S = 10
    started = time.monotonic()
    actors._round(run, Transcript(run), 1)

    assert time.monotonic() - started < 5  # not the verdict wait (900 s in production)
    transcript_module.writer.flush()
    assert run.events.filter(kind=RunEvent.Kind.ERROR, text=actors.NO_WORKER).exists()
    assert run.rounds_completed == 1


def test_a_cancel_while_the_last_round_waits_ends_the_run_cancelled(run, monkeypatch):
    register("cpu")  # live: the candidate's verification is queued, and stays pending
    set_status = actors._set_status

    def cancelled_as_the_wait_starts(run, transcript, status, **kwargs):
        set_status(run, transcript, status, **kwargs)
        if status == OptimizationRun.Status.WAITING:
            OptimizationRun.objects.filter(pk=run.pk).update(cancel_requested_at=timezone.now())

    monkeypatch.setattr(actors, "_set_status", cancelled_as_the_wait_starts)
    OptimizationRun.objects.filter(pk=run.pk).update(max_rounds=1)

    actors._loop(OptimizationRun.objects.get(pk=run.pk))

    ended = OptimizationRun.objects.get(pk=run.pk)
    assert ended.status == OptimizationRun.Status.CANCELLED
    assert ended.candidates.get().evaluations.get().status == "queued"
    assert not ended.events.filter(kind=RunEvent.Kind.VERDICTS).exists()
