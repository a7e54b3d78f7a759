"""A queued evaluation says what it waits for: its architecture's workers and the jobs ahead of it."""

from datetime import timedelta

import pytest
from django.utils import timezone

from court.models import Evaluation
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import make_candidate
from tests.verification.conftest import register
from verification.waiting import waits_for

pytestmark = pytest.mark.django_db


def sent(scale: int, *, arch="cpu", queue=None, seconds_ago=0.0, status="queued", started=None) -> Evaluation:
    now = timezone.now()
    return Evaluation.objects.create(
        candidate=make_candidate(scale=scale),
        arch=arch,
        harness_version=HARNESS_VERSION,
        status=status,
        queue=queue or f"gpu.{arch}",
        enqueued_at=now - timedelta(seconds=seconds_ago),
        started_at=started,
        finished_at=now if status == "verified" else None,
    )


def wait_of(evaluation):
    return waits_for([evaluation])[evaluation.pk]


def test_it_counts_the_jobs_sent_before_it_on_its_queue():
    sent(2, seconds_ago=30)
    sent(3, seconds_ago=20)
    mine = sent(4, seconds_ago=10)
    sent(5, seconds_ago=0)  # after it
    sent(6, arch="h100", seconds_ago=60)  # another architecture
    register("cpu")
    wait = wait_of(mine)
    assert (wait.queued_ahead, wait.place, wait.workers) == (2, 3, 1)
    assert wait.sentence() == "2 jobs ahead in the queue for the only cpu worker."


def test_a_bulk_job_waits_for_every_interactive_one():
    sent(2, seconds_ago=0)  # interactive, sent after it, still first
    mine = sent(3, queue="gpu.cpu.bulk", seconds_ago=10)
    assert wait_of(mine).queued_ahead == 1


def test_the_only_worker_busy_for_minutes_is_said():
    sent(2, status="running", started=timezone.now() - timedelta(minutes=10))
    mine = sent(3)
    register("cpu")
    assert wait_of(mine).sentence() == "Next in line for the only cpu worker (busy: 1 running, the longest for 10 min)."


def test_without_a_live_worker_it_says_so():
    mine = sent(2)
    register("cpu", age_seconds=3600)
    assert wait_of(mine).sentence().startswith("Waiting for a cpu worker: none is running now.")


def test_only_queued_evaluations_wait():
    assert waits_for([sent(2, status="running", started=timezone.now()), sent(3, status="verified")]) == {}
