"""Statistics of timing samples, sampling's stopping rule, and the parent's own clock."""

import math
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


def _timed(who: str, ms: float, stream_ms: float | None) -> Call:
    return Call(who, TIMED, 0, {"ok": True}, wall_ms=ms + 1.0, timing={"ms": ms, "stream_ms": stream_ms})


def _evidence(candidate: list[tuple[float, float]], eager: list[tuple[float, float]]) -> Evidence:
    evidence = Evidence(device="cuda", baselines=("eager",))
    evidence.calls = [_timed(CANDIDATE, *pair) for pair in candidate] + [_timed("eager", *pair) for pair in eager]
    return evidence


def test_the_harness_wake_up_after_the_synchronize_is_taken_off_every_sample():
    # Every device-wide interval holds 0.030 ms of the host waking up after the call's synchronize.
    evidence = _evidence(
        candidate=[(0.130 + 0.001 * i, 0.100 + 0.001 * i) for i in range(9)],
        eager=[(0.330 + 0.001 * i, 0.300 + 0.001 * i) for i in range(9)],
    )

    assert evidence.wake_up_ms() == pytest.approx(0.030)
    assert statistics.median(evidence.timed_samples(CANDIDATE)) == pytest.approx(0.104)
    assert statistics.median(evidence.timed_samples("eager")) == pytest.approx(0.304)


def test_work_left_on_another_stream_stays_inside_the_sample():
    # The candidate's calling stream ends at 0.02 ms, but the device is busy until 0.5 ms: its
    # wide gaps must not widen what is taken off (the eager baseline's 0.03 ms).
    evidence = _evidence(candidate=[(0.530, 0.020)] * 9, eager=[(0.330, 0.300)] * 9)

    assert evidence.timed_samples(CANDIDATE) == [pytest.approx(0.500)] * 9


def test_a_sample_is_never_below_the_calling_streams_own_interval():
    # A call whose device idled before its host returned has a short gap: less is taken off.
    evidence = _evidence(candidate=[(0.110, 0.100)] * 9, eager=[(0.330, 0.300)] * 9)

    assert evidence.timed_samples(CANDIDATE) == [pytest.approx(0.100)] * 9


def test_on_the_cpu_samples_are_the_reported_times():
    evidence = _evidence(candidate=[(2.0, None)] * 5, eager=[(3.0, None)] * 5)

    assert evidence.wake_up_ms() is None
    assert evidence.timed_samples(CANDIDATE) == [2.0] * 5
