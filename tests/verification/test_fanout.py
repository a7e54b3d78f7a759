"""Fan-out: a saved candidate gets one evaluation per live architecture, and only those."""

import pytest

from court.models import Evaluation
from tests.court.factories import make_candidate
from tests.verification.conftest import register
from verification.fanout import catch_up, fan_out

pytestmark = pytest.mark.django_db(transaction=True)


def pending(broker, queue: str) -> int:
    """Messages waiting on a queue, for the in-process and the Redis broker alike."""
    if hasattr(broker, "client"):
        return broker.client.hlen(f"{broker.namespace}:{queue}.msgs")
    return broker.queues[queue].qsize() if queue in broker.queues else 0


def test_saving_a_candidate_enqueues_one_evaluation_per_live_architecture(broker):
    register("h100")
    register("a100")
    candidate = make_candidate()
    assert sorted(candidate.evaluations.values_list("arch", flat=True)) == ["a100", "h100"]
    assert all(e.status == "queued" for e in candidate.evaluations.all())
    assert pending(broker, "gpu.h100") == 1 and pending(broker, "gpu.a100") == 1


def test_a_stale_worker_is_not_sent_work(broker):
    register("h100")
    register("l40", age_seconds=600)
    candidate = make_candidate()
    assert list(candidate.evaluations.values_list("arch", flat=True)) == ["h100"]
    assert pending(broker, "gpu.l40") == 0


def test_fanning_out_twice_does_not_duplicate(broker):
    register("h100")
    candidate = make_candidate()
    assert fan_out(candidate) == []
    assert Evaluation.objects.count() == 1
    assert pending(broker, "gpu.h100") == 1


def test_imported_candidates_go_to_the_bulk_queue(broker):
    register("h100")
    make_candidate(origin="import", origin_label="cuda-l1")
    assert pending(broker, "gpu.h100.bulk") == 1 and pending(broker, "gpu.h100") == 0


def test_an_architecture_that_comes_online_later_catches_up(broker):
    register("h100")
    first, second = make_candidate(scale=2), make_candidate(scale=3)
    register("a100")
    evaluations = catch_up("a100")
    assert sorted(e.candidate_id for e in evaluations) == sorted([first.pk, second.pk])
    assert pending(broker, "gpu.a100.bulk") == 2
    assert catch_up("a100") == []


def test_hidden_and_delisted_kernels_are_not_caught_up(broker):
    make_candidate(scale=2, curation="hidden")
    make_candidate(scale=3, curation="delisted", curation_reason="lazy output")
    register("a100")
    assert catch_up("a100") == []
