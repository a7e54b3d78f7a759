"""The leaderboard counts only current, verified, listed kernels, and summarizes them like CUDA-L1."""

import math

import pytest
from django.utils import timezone

from court.leaderboard import best_per_problem, summarize, summary_table
from court.models import Evaluation
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import make_candidate, make_problem

pytestmark = pytest.mark.django_db

_scales = iter(range(100, 10_000))


def verified(candidate, arch="h100", eager=2.0, compile=1.5, version=HARNESS_VERSION, status="verified"):
    return Evaluation.objects.create(
        candidate=candidate,
        arch=arch,
        harness_version=version,
        status=status,
        speedup_eager=eager,
        speedup_compile=compile,
        finished_at=timezone.now(),
    )


def kernel_for(problem, **fields):
    return make_candidate(problem=problem, scale=next(_scales), **fields)


def test_best_kernel_per_problem_is_the_fastest_verified_one():
    problem = make_problem(scale=2, origin="kernelbench", level=1, task=1)
    verified(kernel_for(problem), eager=1.2)
    best = verified(kernel_for(problem), eager=3.0)
    verified(kernel_for(problem), eager=9.0, status="rejected")
    assert best_per_problem("h100") == [best]


def test_old_harness_versions_hidden_and_delisted_kernels_do_not_count():
    problem = make_problem(scale=2, origin="kernelbench", level=1, task=1)
    verified(kernel_for(problem), eager=5.0, version="0-old")
    verified(kernel_for(problem, curation="hidden"), eager=6.0)
    verified(kernel_for(problem, curation="delisted", curation_reason="caches"), eager=7.0)
    verified(kernel_for(problem), eager=8.0, arch="a100")
    assert best_per_problem("h100") == []


def test_summary_statistics_match_hand_computed_values():
    summary = summarize([1.0, 2.0, 4.0, 8.0], level=1, baseline="eager", problems=10)
    assert summary.verified == 4
    assert summary.mean == pytest.approx(3.75)
    assert summary.median == pytest.approx(3.0)
    assert summary.geomean == pytest.approx(math.sqrt(8))
    assert (summary.p25, summary.p75, summary.max) == (pytest.approx(1.75), pytest.approx(5.0), 8.0)


def test_only_a_speedup_whose_whole_interval_is_above_1_01_beats_its_baseline():
    sure, noisy, bare = (make_problem(scale=4 + i, origin="kernelbench", level=2, task=10 + i) for i in range(3))
    for problem, interval in ((sure, [1.5, 1.7]), (noisy, [0.95, 1.6])):
        evaluation = verified(kernel_for(problem), eager=1.3)
        evaluation.verdict = {"timing": {"speedup_intervals": {"eager": interval}}}
        evaluation.save()
    verified(kernel_for(bare), eager=3.0)  # an older harness's verdict: a speedup without an interval

    level2 = next(s for s in summary_table("h100") if s.level == 2 and s.baseline == "eager")
    assert level2.verified == 3 and level2.beats == 1


def test_degenerate_problems_stay_out_of_the_summary():
    honest = make_problem(scale=2, origin="kernelbench", level=2, task=1)
    degenerate = make_problem(scale=3, origin="kernelbench", level=2, task=2, degenerate=True)
    verified(kernel_for(honest), eager=2.0)
    verified(kernel_for(degenerate), eager=80.0)
    level2 = next(s for s in summary_table("h100") if s.level == 2 and s.baseline == "eager")
    assert level2.verified == 1 and level2.max == 2.0 and level2.problems == 1
