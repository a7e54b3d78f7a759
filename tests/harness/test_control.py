"""The A/A control: the reference run as a candidate is, timed against eager in the same rounds. It
reads 1.0 where the host times both kinds of process alike; off 1.0, no speedup is stated as a win."""

from evaluation.harness import scoring
from evaluation.harness.evidence import CANDIDATE, CONTROL, STEADY, Call, Evidence
from evaluation.harness.limits import Limits, Plan
from tests.harness.test_checks import _evidence


def _rounds(evidence: Evidence, who: str, ms: float, rounds: int = 6, waited_ms: float | None = None) -> None:
    """Rounds of bursts of four calls of `ms` each; `waited_ms`: the parent's own clock per call (the
    call's time and the harness's overhead, 1 ms by default)."""
    for number in range(1, rounds + 1):
        for index in range(4):
            jitter = 1 + 0.002 * ((number + index) % 3)
            evidence.calls.append(Call(who, STEADY, 0, {"ok": True}, ms, timing={"ms": ms * jitter}, burst=(number, index)))
        waited = 4 * (waited_ms if waited_ms is not None else ms + 1.0)
        evidence.bursts.append(
            {"who": who, "phase": STEADY, "round": number, "calls": 4, "wall_ms": waited, "sum_ms": 4 * ms, "leftover_ms": 0.0}
        )


def _timed(candidate_ms: float, eager_ms: float, control_ms: float | None, candidate_waited_ms: float | None = None) -> dict:
    evidence = _evidence()
    evidence.steady = {"rounds": 6, "stopped_by": "interval"}
    _rounds(evidence, CANDIDATE, candidate_ms, waited_ms=candidate_waited_ms)
    _rounds(evidence, "eager", eager_ms)
    if control_ms is not None:
        _rounds(evidence, CONTROL, control_ms)
    return scoring.verdict(evidence, plan=Plan(bootstrap_resamples=200), limits=Limits())


def test_a_control_at_one_leaves_the_speedup_as_measured():
    verdict = _timed(candidate_ms=1.0, eager_ms=2.0, control_ms=2.0)

    timing = verdict["timing"]
    assert abs(timing["control"]["speedup"] - 1.0) < 0.01 and timing["control"]["off"] is False
    assert timing["beats"] == {"eager": True}
    assert "control_off" not in verdict["flags"]


def test_a_host_that_times_the_candidates_process_faster_states_no_win():
    # The reference itself reads 1.6x faster in a process of the candidate's shape: so would the candidate.
    verdict = _timed(candidate_ms=1.0, eager_ms=2.0, control_ms=1.25)

    timing = verdict["timing"]
    assert timing["control"]["off"] is True
    assert timing["beats"] == {"eager": False}
    low, high = timing["speedup_intervals"]["eager"]
    assert low <= 1.0 <= high
    assert "control_off" in verdict["flags"]


def test_times_under_reported_against_the_parents_clock_are_rejected():
    # A 20 ms call reported at 5 ms (compiled code can still rewrite its own process's memory): the
    # parent waited 15 ms more per call than for the control, which runs the same capture path.
    verdict = _timed(candidate_ms=5.0, eager_ms=20.0, control_ms=20.0, candidate_waited_ms=21.0)

    assert verdict["status"] == "rejected"
    assert verdict["reason"].startswith("clock_consistent:") and "under-reported" in verdict["reason"]


def test_an_honest_candidates_overhead_is_within_the_control_s():
    verdict = _timed(candidate_ms=5.0, eager_ms=20.0, control_ms=20.0)

    clock = next(c for c in verdict["checks"] if c["name"] == "clock_consistent")
    assert clock["passed"] and "from below" in clock["detail"]


def test_the_reference_timed_as_a_candidate_runs_beside_every_cpu_verdict(verifier):
    verdict = verifier("matmul", "honest_matmul", plan={"control": True, "steady_min_rounds": 4, "steady_max_rounds": 4})

    assert verdict["status"] == "verified", verdict["reason"]
    control = verdict["timing"]["control"]
    assert control["speedup"] > 0 and control["interval"] is not None
    assert control["candidate_speedup"] > 0
