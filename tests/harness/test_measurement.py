"""Statistics of timing samples, sampling's stopping rule, and the parent's own clock."""

import math
import random
import statistics

import pytest

from evaluation.harness import measurement
from evaluation.harness.evidence import CANDIDATE, TIMED, Call, Evidence


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


def _timed(who: str, ms: float, stream_ms: float | None) -> Call:
    return Call(who, TIMED, 0, {"ok": True, "ms": ms, "stream_ms": stream_ms}, wall_ms=ms + 1.0)


def _evidence(candidate: list[tuple[float, float]], eager: list[tuple[float, float]]) -> Evidence:
    ev = Evidence(device="cuda", baselines=("eager",))
    ev.calls = [_timed(CANDIDATE, *pair) for pair in candidate] + [_timed("eager", *pair) for pair in eager]
    return ev


def test_the_harness_wake_up_after_the_synchronize_is_taken_off_every_sample():
    # Every device-wide interval holds 0.030 ms of the host waking up after the call's synchronize.
    ev = _evidence(candidate=[(0.130 + 0.001 * i, 0.100 + 0.001 * i) for i in range(9)],
                   eager=[(0.330 + 0.001 * i, 0.300 + 0.001 * i) for i in range(9)])

    assert ev.wake_up_ms() == pytest.approx(0.030)
    assert statistics.median(ev.timed_samples(CANDIDATE)) == pytest.approx(0.104)
    assert statistics.median(ev.timed_samples("eager")) == pytest.approx(0.304)


def test_work_left_on_another_stream_stays_inside_the_sample():
    # The candidate's calling stream ends at 0.02 ms, but the device is busy until 0.5 ms: its
    # wide gaps must not widen what is taken off (the eager baseline's 0.03 ms).
    ev = _evidence(candidate=[(0.530, 0.020)] * 9, eager=[(0.330, 0.300)] * 9)

    assert ev.timed_samples(CANDIDATE) == [pytest.approx(0.500)] * 9


def test_a_sample_is_never_below_the_calling_streams_own_interval():
    # A call whose device idled before its host returned has a short gap: less is taken off.
    ev = _evidence(candidate=[(0.110, 0.100)] * 9, eager=[(0.330, 0.300)] * 9)

    assert ev.timed_samples(CANDIDATE) == [pytest.approx(0.100)] * 9


def test_on_the_cpu_samples_are_the_reported_times():
    ev = _evidence(candidate=[(2.0, None)] * 5, eager=[(3.0, None)] * 5)

    assert ev.wake_up_ms() is None
    assert ev.timed_samples(CANDIDATE) == [2.0] * 5
