"""An attacker's reading of harness 16, each on constructed evidence (no GPU here) but the last: work a
call leaves unpaid below the flag's share or runs while the harness times its own write, and a loss a
null result hid where no A/A control ran, or where too few rounds gave it no interval."""

import pytest

from evaluation.harness import scoring
from evaluation.harness.evidence import CANDIDATE, PROFILE, TIMED, Call
from evaluation.harness.limits import INTERVAL_ROUNDS, Limits, Plan
from evaluation.harness.verdict import BEATS
from tests.harness.test_checks import _drained_evidence


def _steady_cuda(*, eager_ms, candidate_ms, candidate_settle=0.006, profile=None):
    """A CUDA verification as test_checks' (six steady rounds, bursts of four calls a side), with the
    latency's samples and the profiled calls, no A/A control and no kept controls of the device (three
    GPU verdicts in four run none: pipeline, control_share)."""
    evidence = _drained_evidence(candidate_settle, eager_ms=eager_ms, candidate_ms=candidate_ms)
    # The latency's samples (one call at a time), as many as the plan needs to state a speed.
    for _ in range(Plan().min_samples):
        for who, ms in (("eager", eager_ms), (CANDIDATE, candidate_ms)):
            evidence.calls.append(Call(who, TIMED, 0, {"ok": True}, ms + 0.05, timing={"ms": ms}))
    if profile:
        candidate_kernels, reference_kernels = profile
        evidence.calls.append(Call(CANDIDATE, PROFILE, 0, {"ok": True, **candidate_kernels}, 1.0))
        evidence.calls.append(Call("eager", PROFILE, 0, {"ok": True, **reference_kernels}, 1.0))
    return evidence


def _verdict(evidence):
    return scoring.verdict(evidence, plan=Plan(bootstrap_resamples=200), limits=Limits())


def test_work_left_below_five_percent_of_a_long_call_is_no_win():
    """The drain's flag, and its charge, start at 1 us or 1% of a call, below the band a win must clear:
    at 5% a 1 ms call left 47 us of its work on a side stream, uncharged and unflagged, and read a 1.05x
    win over eager for the reference's own work."""
    # The reference's work is 1.000 ms a call; the candidate does 0.953 ms of it on the calling stream
    # and leaves 0.047 ms (4.9% of its call) on a side stream, drained after each call.
    verdict = _verdict(_steady_cuda(eager_ms=1.0, candidate_ms=0.953, candidate_settle=0.006 + 0.047))

    assert verdict["status"] == "verified", verdict["reason"]
    steady = verdict["timing"]["measures"]["steady_state"]
    hidden = steady["candidate"]["leftover_charged_us"] > 40 or "hidden_work" in verdict["flags"]
    assert hidden and not verdict["timing"]["beats"]["eager"], (verdict["timing"]["speedups"], verdict["flags"])


def test_a_drain_far_below_the_floor_is_not_a_free_win():
    """A call's drain is `settled` less `floor` (callsite.c): work a native thread (no GIL needed: a C++
    extension's std::thread) launches while the call site times its own write lengthens the floor, and
    the drain reads negative. Far below zero it is rejected; a little below, charged as far as it lies
    below eager's."""
    # The candidate returns in 2 us and a native thread runs the call's 50 us of work during the floor's
    # synchronize: settled - floor reads -44 us after each call, where eager's reads +6 us.
    verdict = _verdict(_steady_cuda(eager_ms=0.050, candidate_ms=0.002, candidate_settle=0.006 - 0.050))

    assert verdict["status"] == "rejected" or "hidden_work" in verdict["flags"], (
        verdict["status"],
        verdict["timing"]["speedups"],
        verdict["flags"],
    )


KERNELS = {
    "kernels": [{"name": "sgemm_128x64", "count": 1}],
    "work": [{"op": "aten::mm", "shapes": "[[32, 48], [48, 24]]", "count": 1}],
}


def test_a_slowed_same_kernel_candidate_without_a_control_keeps_its_loss():
    """On a GPU three verdicts in four run no A/A control: there a candidate with the reference's kernels
    and a 2 ms sleep (same_kernels_slowed) was stated 1.0x by construction, ranked beside the reference,
    where it measured 0.02x. Twice as slow as eager, beyond any reading of the reference against itself,
    it keeps its loss."""
    evidence = _steady_cuda(eager_ms=0.050, candidate_ms=2.05, profile=(KERNELS, KERNELS))
    verdict = _verdict(evidence)

    assert verdict["timing"]["null_result"], verdict["timing"]
    assert verdict["timing"]["speedups"]["eager"] < 0.5, verdict["reason"]


def test_a_candidate_cannot_hide_a_loss_behind_the_profiled_call(verifier):
    """A candidate can tell the profiled call (torch._C._autograd._profiler_enabled()): it shows the
    reference's operator on the reference's shapes there and runs slower work of its own in every timed
    call. Its kernels then read as the reference's, but the A/A control (every CPU verification runs
    one) times it slower than the reference in a process of its shape: the loss is stated, not 1.0."""
    verdict = verifier("matmul", "attack_profile_aware", plan={"profile": True, "control": True})

    assert "1.0x by construction" not in verdict["reason"]
    if verdict["status"] == "rejected":
        # Under the suite's load the clock's bound from below has rejected it first (CI, 2026-11-29: its
        # calls reported 0.86 ms, the parent waited 4.1 ms more a call than for the control): not hidden
        # either; whether that check raises false alarms for honest calls on a loaded CPU is an open question.
        assert next(c["name"] for c in verdict["checks"] if not c["passed"]) == "clock_consistent", verdict["reason"]
        return
    assert verdict["status"] == "verified", verdict["reason"]
    timing = verdict["timing"]
    assert "same_kernels_as_reference" in verdict["flags"] and timing["null_result"], verdict["flags"]
    assert timing["speedups"]["eager"] < 1 / BEATS, timing


def test_no_plan_times_fewer_rounds_than_an_interval_needs():
    """With two rounds no ratio has an interval, the A/A control's comparison included, and the test above
    read 1.0 for the attack on a loaded host (its plan allowed two: the budget ended the rounds there)."""
    with pytest.raises(ValueError, match="steady_min_rounds \\(2\\) is under 3"):
        Plan(steady_min_rounds=2)
    assert Plan(steady_min_rounds=INTERVAL_ROUNDS, steady_max_rounds=INTERVAL_ROUNDS)


def test_a_steady_state_cut_short_of_an_interval_states_no_speed():
    """A candidate can spend its own time (at import, in its first build, in a warm-up burst) until the
    wall limit ends the steady state after a round or two, or skips it: no ratio then has an interval,
    so the A/A control, the clock's bound from below and a null result's kept loss all go quiet (a
    profile-aware candidate read 1.0 for a 0.09x loss, verified). Too few rounds is no speed stated."""
    for kept in (2, 0):
        evidence = _steady_cuda(eager_ms=1.0, candidate_ms=0.5)
        evidence.calls = [c for c in evidence.calls if not c.burst or c.burst[0] <= kept]
        verdict = _verdict(evidence)

        assert verdict["status"] == "timeout", verdict["reason"]
        assert verdict["reason"].startswith(f"timing_complete: the wall limit (1500 s) came before the timing did: {kept} steady")
    assert _verdict(_steady_cuda(eager_ms=1.0, candidate_ms=0.5))["status"] == "verified"
