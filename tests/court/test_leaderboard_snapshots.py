"""The leaderboard is computed once per change, and every change shows on the next request: a
verdict, a curation, a problem's visibility or statistics, a re-verification. What it keeps lives in
the database, beside what changes it (tests/api/test_cache_outage.py: no cache needed)."""

import json
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError, transaction
from django.test import Client
from django.utils import timezone

from court import curation, leaderboard
from court.leaderboard import boards, snapshots
from court.models import Candidate, Evaluation, LeaderboardSnapshot, LeaderboardVersion
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import make_candidate, make_problem
from tests.court.test_kernel_page import VERDICT
from verification.evaluations import record_verdict, reopen

pytestmark = pytest.mark.django_db

ARCH = "h100"


@pytest.fixture
def staff():
    return get_user_model().objects.create_user("curator", is_staff=True)


def verdict(speedup: float, interval: list[float]) -> dict:
    timing = {**VERDICT["timing"], "speedups": {"eager": speedup}, "speedup_intervals": {"eager": interval}}
    return {**VERDICT, "timing": timing}


def judged(candidate, speedup=2.0, interval=(1.9, 2.1)):
    evaluation = Evaluation.objects.create(candidate=candidate, arch=ARCH, harness_version=HARNESS_VERSION)
    record_verdict(evaluation, verdict(speedup, list(interval)))
    return evaluation


def kernels_on_page(client) -> set[int]:
    response = client.get(f"/leaderboard/{ARCH}/")
    assert response.status_code == 200
    return {row.kernel for row in response.context["rows"]}


def kernels_in_api(client) -> set[int]:
    return {row["kernel"] for row in client.get(f"/api/leaderboard/{ARCH}/").json()["rows"]}


def kernels_in_export(client) -> set[int]:
    lines = client.get(f"/api/leaderboard/{ARCH}/export.jsonl").content.decode().splitlines()
    return {line["measured"]["kernel_id"] for line in map(json.loads, lines) if "measured" in line}


def counted_in_statistics() -> int:
    return next(s for s in leaderboard.board(ARCH).summary if s.level == "all" and s.baseline == "eager").verified


@pytest.fixture
def problem():
    return make_problem(scale=2, origin="kernelbench", level=1, task=1)


def test_a_verdict_shows_on_the_next_request(problem):
    client = Client()
    first = make_candidate(problem=problem, scale=3)
    judged(first, speedup=1.5, interval=(1.4, 1.6))
    assert kernels_on_page(client) == kernels_in_api(client) == kernels_in_export(client) == {first.pk}

    faster = make_candidate(problem=problem, scale=4)
    judged(faster, speedup=3.0, interval=(2.9, 3.1))
    assert kernels_on_page(client) == kernels_in_api(client) == kernels_in_export(client) == {faster.pk}


def test_a_curation_shows_on_the_next_request(problem, staff):
    client = Client()
    kernel = make_candidate(problem=problem, scale=3)
    judged(kernel)
    assert kernels_on_page(client) == {kernel.pk}

    curation.curate_kernel(candidate=kernel, state="hidden", by=staff)
    assert kernels_on_page(client) == kernels_in_api(client) == kernels_in_export(client) == set()
    assert leaderboard.leaderboard_archs() == []

    curation.curate_kernel(candidate=kernel, state="featured", by=staff)
    assert kernels_on_page(client) == {kernel.pk}


def test_a_problem_hidden_or_counted_shows_on_the_next_request(problem, staff):
    client = Client()
    judged(make_candidate(problem=problem, scale=3))
    curation.set_problem_visibility(problem=problem, visibility="hidden", by=staff)
    assert kernels_on_page(client) == set()

    curation.set_problem_visibility(problem=problem, visibility="listed", by=staff)
    problem.degenerate = True
    problem.save()
    curation.set_problem_in_statistics(problem=problem, counted=False, by=staff)
    assert counted_in_statistics() == 0

    curation.set_problem_in_statistics(problem=problem, counted=True, by=staff)
    assert counted_in_statistics() == 1


def test_reopening_a_verified_kernel_takes_it_off_on_the_next_request(problem):
    kernel = make_candidate(problem=problem, scale=3)
    judged(kernel)
    assert kernels_on_page(Client()) == {kernel.pk}
    reopen([kernel], archs=[ARCH])
    assert kernels_on_page(Client()) == set()


def test_it_is_computed_once_per_change(problem, monkeypatch):
    judged(make_candidate(problem=problem, scale=3))
    computed = []
    compute = leaderboard.compute_board
    monkeypatch.setattr(boards, "compute_board", lambda arch: computed.append(arch) or compute(arch))
    client = Client()
    for _ in range(3):
        kernels_on_page(client)
        client.get(f"/api/leaderboard/{ARCH}/")
    assert computed == [ARCH]

    judged(make_candidate(problem=problem, scale=4))
    kernels_on_page(client)
    assert computed == [ARCH, ARCH]


def test_a_write_around_the_owners_of_changes_shows_after_max_age(problem, monkeypatch):
    client = Client()
    kernel = make_candidate(problem=problem, scale=3)
    judged(kernel)
    assert kernels_on_page(client) == {kernel.pk}

    Candidate.objects.filter(pk=kernel.pk).update(curation="hidden")  # a shell, not court.curation
    assert kernels_on_page(client) == {kernel.pk}

    later = timezone.now() + leaderboard.MAX_AGE + timedelta(seconds=1)
    monkeypatch.setattr(snapshots, "timezone", SimpleNamespace(now=lambda: later))
    assert kernels_on_page(client) == set()


def test_a_change_rolled_back_keeps_the_version(problem, staff):
    kernel = make_candidate(problem=problem, scale=3)
    judged(kernel)
    assert kernels_on_page(Client()) == {kernel.pk}
    version = LeaderboardVersion.objects.get().token
    with pytest.raises(RuntimeError), transaction.atomic():
        curation.curate_kernel(candidate=kernel, state="hidden", by=staff)
        raise RuntimeError("what came after the curation failed")
    assert LeaderboardVersion.objects.get().token == version
    assert kernels_on_page(Client()) == {kernel.pk}


def test_a_snapshot_that_cannot_be_kept_is_served_all_the_same(problem, monkeypatch):
    kernel = make_candidate(problem=problem, scale=3)
    judged(kernel)

    def refuse(*args, **kwargs):
        raise DatabaseError("disk full")

    monkeypatch.setattr(LeaderboardSnapshot.objects, "create", refuse)
    assert kernels_on_page(Client()) == {kernel.pk}
    assert not LeaderboardSnapshot.objects.exists()
