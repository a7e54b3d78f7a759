"""Statistics of timing samples, sampling's stopping rule, and the parent's own clock."""

import math
import random

import pytest

from evaluation.harness import measurement


def test_summary_is_median_iqr_and_count():
    summary = measurement.summarize([5.0, 1.0, 2.0, 4.0, 3.0])

    assert summary == {"median_ms": 3.0, "iqr_ms": 2.0, "samples": 5}


def test_median_interval_narrows_with_more_samples():
    few = [1.0 + 0.01 * (i % 7) for i in range(10)]
    many = [1.0 + 0.01 * (i % 7) for i in range(200)]

    assert measurement.median_ci_fraction(many) < measurement.median_ci_fraction(few)
    assert measurement.median_ci_fraction([1.0, 2.0]) == math.inf


def test_sampling_stops_only_when_every_side_is_stable_and_has_enough_samples():
    stable = [1.0] * 30
    noisy = [1.0, 3.0] * 15

    assert measurement.converged({"candidate": stable, "eager": stable}, 0.01, 20)
    assert not measurement.converged({"candidate": stable, "eager": noisy}, 0.01, 20)
    assert not measurement.converged({"candidate": stable[:10]}, 0.01, 20)


def test_a_call_claiming_more_time_than_the_parent_waited_is_caught():
    assert measurement.calls_exceeding_wall([(1.0, 2.0), (5.0, 3.0)]) == [(5.0, 3.0)]


def test_a_claimed_saving_the_parents_clock_did_not_see_is_caught():
    # Both sides really take about 10 ms (walls), but the candidate reports 1 ms.
    candidate = [(1.0, 12.0 + 0.01 * i) for i in range(20)]
    baseline = [(10.0, 12.0 + 0.01 * i) for i in range(20)]

    assert "saves 9.000 ms" in measurement.unexplained_saving(candidate, baseline)


@pytest.mark.parametrize("candidate_ms, candidate_wall", [(5.0, 7.0), (1.0, 3.1)])
def test_an_honest_saving_or_a_small_claim_passes(candidate_ms, candidate_wall):
    candidate = [(candidate_ms, candidate_wall)] * 20
    baseline = [(10.0, 12.0)] * 20

    assert measurement.unexplained_saving(candidate, baseline) is None


def _busy_host_rounds(*, candidate_ms, baseline_ms, hidden_ms=0.0, rounds=40):
    """Timed rounds as a loaded host gives them: 6 ms of the harness's bookkeeping around every
    call, 30% more on the candidate's side (its reply carries output and integrity facts, its
    global state is applied and restored), jitter, and a neighbour that now and then stretches a
    whole round. Each round's bookkeeping differs by more than the claimed saving's share of it."""
    rng = random.Random(1)
    candidate, baseline = [], []
    for _ in range(rounds):
        stretch = 1.0 if rng.random() < 0.9 else rng.uniform(1.5, 3.0)
        for side, ms, bookkeeping, hidden in ((candidate, candidate_ms, 7.8, hidden_ms), (baseline, baseline_ms, 6.0, 0.0)):
            reported = ms * stretch * rng.uniform(0.97, 1.03)
            side.append((reported, reported + hidden + bookkeeping * stretch * rng.uniform(0.99, 1.01)))
    return candidate, baseline


def test_scheduler_noise_on_a_busy_host_does_not_reject_an_honest_saving():
    candidate, baseline = _busy_host_rounds(candidate_ms=0.06, baseline_ms=1.7)

    assert measurement.unexplained_saving(candidate, baseline) is None


def test_a_forged_saving_is_caught_through_the_same_noise():
    candidate, baseline = _busy_host_rounds(candidate_ms=0.06, baseline_ms=1.7, hidden_ms=20.0)

    assert "saves" in measurement.unexplained_saving(candidate, baseline)


def test_too_few_rounds_are_never_judged():
    candidate, baseline = _busy_host_rounds(candidate_ms=0.06, baseline_ms=1.7, hidden_ms=20.0, rounds=9)

    assert measurement.unexplained_saving(candidate, baseline) is None
