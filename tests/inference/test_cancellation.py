"""A process's streaming runs ask the database about cancels together, one query per interval, and
a run cancelled mid-stream stops with its whole transcript stored."""

import time

import pytest

from court.models import OptimizationRun, RunEvent
from inference.cancellation import CancelRequests
from inference.services import cancel_run, start_run
from tests.court.factories import make_problem
from tests.inference.model_server import SERVED_MODEL, ReplayServer, Scenario

pytestmark = pytest.mark.django_db(transaction=True)


def test_runs_watched_together_are_asked_about_in_one_query(django_assert_num_queries):
    problem = make_problem()
    first, second = (OptimizationRun.objects.create(problem=problem) for _ in range(2))
    cancel_run(run=second)
    requests = CancelRequests(interval_s=3600)
    with requests.watching(first.pk), requests.watching(second.pk), django_assert_num_queries(1):
        answers = [requests.requested(first.pk), requests.requested(second.pk), requests.requested(first.pk)]
    assert answers == [False, True, False]


def test_a_cancel_is_seen_once_the_last_answer_is_older_than_the_interval():
    run = OptimizationRun.objects.create(problem=make_problem())
    requests = CancelRequests(interval_s=0.2)
    with requests.watching(run.pk):
        assert not requests.requested(run.pk)
        cancel_run(run=run)
        assert not requests.requested(run.pk)  # the answer of a moment ago
        time.sleep(0.25)  # the interval is the behaviour under test
        assert requests.requested(run.pk)


@pytest.fixture
def slow_model(settings):
    server = ReplayServer(Scenario("reasoning_content.sse", event_delay_s=0.1))
    settings.INFERENCE_VLLM_URL, settings.INFERENCE_VLLM_MODEL = server.url, SERVED_MODEL
    yield server
    server.stop()


def wait_for(condition, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_run_cancelled_mid_stream_stops_with_its_transcript_stored(slow_model, inference_worker):
    run = start_run(problem=make_problem(), backend="vllm", max_rounds=1)
    wait_for(lambda: run.events.filter(kind=RunEvent.Kind.REASONING).exists())

    cancel_run(run=run)
    wait_for(lambda: OptimizationRun.objects.get(pk=run.pk).is_finished)

    run.refresh_from_db()
    assert run.status == OptimizationRun.Status.CANCELLED
    events = list(run.events.order_by("seq"))
    assert [event.seq for event in events] == list(range(1, len(events) + 1))
    assert (events[-1].kind, events[-1].data["status"]) == (RunEvent.Kind.STATUS, "cancelled")
    assert not run.events.filter(kind=RunEvent.Kind.FINISHED).exists()  # stopped before the model finished
