"""The registry decides: integrity before faults before correctness, and every check that ran
is reported."""

import pytest

from evaluation.harness import checks, flags, scoring
from evaluation.harness.evidence import CANDIDATE, STEADY, TIMED, TRIAL, Call, Evidence, Fault
from evaluation.harness.limits import Limits, Plan

GOOD_LEAF = {
    "type": "torch.Tensor",
    "plain_tensor": True,
    "dtype": "float32",
    "shape": [2, 2],
    "device": "cpu",
    "strided": True,
    "distinct_elements": True,
    "aliases_input": False,
    "aliases_earlier_output": False,
    "aliases_model_state": False,
    "aliases_other_output": False,
}
SPEC = [{"dtype": "float32", "shape": [2, 2], "device": "cpu"}]
REFERENCE_FACTS = [{"aliases_input": False, "distinct_elements": True}]


def _evidence(leaf=None, *, patched=(), error=0.0, phase=TRIAL) -> Evidence:
    evidence = Evidence(device="cpu", baselines=("eager",))
    evidence.static = {"parse_error": None}
    evidence.problem = {"spec": SPEC, "reference_precision": "float64 on cpu", "structure": "T", "output_facts": REFERENCE_FACTS}
    evidence.prepared = {"baselines": {"eager": "ready"}}
    evidence.loaded = {"ok": True, "defines_model_new": True, "patched": list(patched)}
    evidence.instantiations = [{"ok": True}]
    reply = {"ok": True, "output": {"structure": "T", "leaves": [leaf or GOOD_LEAF]}, "changed_after_capture": []}
    comparison = {"max_rel_error": error, "max_abs_error": error, "nonfinite": 0, "leaves": []}
    evidence.calls = [
        Call(
            CANDIDATE,
            phase,
            1,
            reply,
            2.0,
            timing={"ms": 1.0, "inputs_modified": []},
            reference={"spec": SPEC},
            comparison=comparison,
            tolerance=1e-2,
        )
    ]
    return evidence


def test_clean_evidence_passes_every_check():
    entries, first = checks.run_checks(_evidence())

    assert first is None
    assert all(entry["passed"] for entry in entries)


def test_integrity_failure_wins_over_a_wrong_answer():
    evidence = _evidence(patched=["torch.matmul"], error=0.5)

    _, first = checks.run_checks(evidence)

    assert (first["name"], first["status"]) == ("harness_intact", "rejected")


def test_torch_compile_reached_without_naming_it_is_told_what_to_do():
    _, first = checks.run_checks(_evidence(patched=["torch.nn.Module.__init__"]))

    assert first["name"] == "harness_intact"
    assert "name torch.compile in its source" in first["detail"]


def test_wrong_answer_on_a_timed_call_names_the_timed_check():
    _, first = checks.run_checks(_evidence(error=0.5, phase=TIMED))

    assert (first["name"], first["status"]) == ("timed_outputs_match_reference", "incorrect")


def test_cuda_error_in_a_call_is_crashed():
    evidence = _evidence()
    evidence.fault = Fault(CANDIDATE, "call", "exception", "CUDA error: an illegal memory access", cuda=True)

    _, first = checks.run_checks(evidence)

    assert (first["name"], first["status"]) == ("candidate_runs", "crashed")


@pytest.mark.parametrize(
    ("stage", "kind", "status"),
    [
        ("graph", "exception", "error"),
        ("graph", "timeout", "timeout"),
        ("graph", "crashed", "crashed"),
        ("later", "memory", "error"),
    ],
)
def test_a_fault_of_the_candidates_calls_is_judged_at_any_stage(stage, kind, status):
    # The device time's `graph` request is a call of the candidate's like any other; a candidate that
    # failed it stopped the run there (no profile, no shapes, no finish) and was verified.
    evidence = _evidence()
    evidence.fault = Fault(CANDIDATE, stage, kind, f"{kind} at {stage}")

    _, first = checks.run_checks(evidence)

    assert (first["name"], first["status"]) == ("candidate_runs", status)


def test_every_check_has_a_unique_name_and_a_known_status():
    names = [check.name for check in checks.CHECKS]

    assert len(names) == len(set(names))
    assert {check.status for check in checks.CHECKS} <= {"error", "rejected", "incorrect"}


def test_output_overwritten_by_the_next_call_is_a_reused_buffer():
    evidence = _evidence()
    evidence.calls[0].reply["output"]["earlier_output_overwritten"] = (
        "Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run."
    )

    _, first = checks.run_checks(evidence)

    assert (first["name"], first["status"]) == ("output_owns_storage", "rejected")
    assert "clone the output" in first["detail"]


def _timed(who: str, ms: float, host_ms: float | None) -> list[Call]:
    timing = {"ms": ms, "stream_ms": ms, "host_ms": host_ms, "inputs_modified": []}
    reply = {"ok": True, "output": {"structure": "T", "leaves": [GOOD_LEAF]}, "changed_after_capture": []}
    return [Call(who, TIMED, seed, dict(reply), ms, timing=dict(timing)) for seed in range(5)]


def test_a_side_whose_host_is_busy_for_most_of_its_sample_is_flagged_host_bound():
    # As CUDA-L1's L1 T1 on an H200: the candidate's host issues four launches for most of its sample.
    evidence = _evidence()
    evidence.calls += _timed(CANDIDATE, 0.23, 0.19) + _timed("eager", 0.46, 0.10)

    detail = flags.run_flags(evidence, None)["host_bound"]

    assert "candidate 0.19 ms of its 0.23 ms" in detail
    assert "eager" not in detail


def test_a_side_whose_gpu_work_dominates_is_not_host_bound():
    evidence = _evidence()
    evidence.calls += _timed(CANDIDATE, 0.40, 0.05) + _timed("eager", 0.46, 0.10)

    assert "host_bound" not in flags.run_flags(evidence, None)


def test_without_host_times_nothing_is_host_bound():
    evidence = _evidence()  # CPU samples: the host's time is the sample itself, not reported apart
    evidence.calls += _timed(CANDIDATE, 0.23, None) + _timed("eager", 0.46, None)

    assert "host_bound" not in flags.run_flags(evidence, None)


def test_an_output_changed_after_its_capture_is_rejected_as_finished_late():
    evidence = _evidence()
    evidence.calls[0].reply["changed_after_capture"] = [0]

    _, first = checks.run_checks(evidence)

    assert (first["name"], first["status"]) == ("output_settled", "rejected")
    assert "changed after the call returned" in first["detail"]


def test_an_input_the_call_site_saw_change_is_rejected():
    evidence = _evidence()
    evidence.calls[0].timing["inputs_modified"] = [1]

    _, first = checks.run_checks(evidence)

    assert (first["name"], first["status"]) == ("inputs_unmodified", "rejected")
    assert "input(s) [1]" in first["detail"]


def test_a_candidate_busy_while_the_baselines_run_is_rejected():
    evidence = _evidence()
    evidence.idle = {"cpu_ms": 900.0, "wall_ms": 1000.0}

    _, first = checks.run_checks(evidence)

    assert (first["name"], first["status"]) == ("quiet_while_baselines_run", "rejected")


def test_a_structure_other_than_the_references_names_both():
    evidence = _evidence()
    evidence.calls[0].comparison = {
        "structure_mismatch": ["tuple[T,F]", "tuple[T,T]"],
        "max_rel_error": float("inf"),
        "max_abs_error": float("inf"),
        "leaves": [],
        "uncaptured": [],
    }

    _, first = checks.run_checks(evidence)

    assert first["name"] == "outputs_match_reference"
    assert "tuple[T,F] where the reference's is tuple[T,T]" in first["detail"]


def test_a_problem_refused_before_any_process_started_says_why():
    evidence = Evidence(device="cpu", baselines=("eager",))
    evidence.static = {"parse_error": None}
    evidence.refused = "the problem's inputs take an estimated 9.3 GiB"

    _, first = checks.run_checks(evidence)

    assert (first["name"], first["status"]) == ("problem_fits", "error")


def _bursts_evidence(candidate_leftover_ms: float, *, call_ms: float = 0.05) -> Evidence:
    """CUDA evidence of eight bursts per side: the eager reference's leave 7 us behind (the host's own
    wait in the closing synchronize), the candidate's `candidate_leftover_ms`."""
    evidence = _evidence()
    evidence.device = "cuda"
    for round_number in range(1, 9):
        evidence.bursts.append(
            {"who": "eager", "phase": "steady", "round": round_number, "leftover_ms": 0.007, "sum_ms": 1.0, "wall_ms": 5.0}
        )
        evidence.bursts.append(
            {
                "who": CANDIDATE,
                "phase": "steady",
                "round": round_number,
                "leftover_ms": candidate_leftover_ms,
                "sum_ms": 1.0,
                "wall_ms": 5.0,
            }
        )
        evidence.calls.append(
            Call(CANDIDATE, "steady", 10 + round_number, {"ok": True}, 1.0, timing={"ms": call_ms}, burst=(round_number, 0))
        )
    return evidence


def test_work_left_after_every_burst_is_rejected_and_a_little_is_flagged():
    rejected = checks.no_hidden_work(_bursts_evidence(0.2))
    flagged = _bursts_evidence(0.035)

    assert rejected and not rejected.passed and "still busy" in rejected.detail
    assert checks.no_hidden_work(flagged).passed
    assert checks.hidden_work(flagged)
    assert checks.no_hidden_work(_bursts_evidence(0.008)).passed
    assert checks.hidden_work(_bursts_evidence(0.008)) is None


def test_work_left_past_each_calls_end_is_rejected():
    """A call that leaves work on a side stream: the device drains later after each of its calls than
    after the eager reference's, though no burst ends with work left. Beyond 30 us (or 15% of a call)
    it is rejected, beyond 1 us (or 5%) flagged: honest kernels alone on an H100 drained up to 7.9 us
    after eager's, on an H200 up to 16 us."""

    def settling_after(candidate_settle_ms):
        evidence = _bursts_evidence(0.007, call_ms=0.001)
        for index in range(12):
            evidence.calls.append(
                Call(
                    "eager", "steady", 100 + index, {"ok": True}, 1.0, timing={"ms": 0.005, "settle_ms": 0.006}, burst=(1, index)
                )
            )
            evidence.calls.append(
                Call(
                    CANDIDATE,
                    "steady",
                    200 + index,
                    {"ok": True},
                    1.0,
                    timing={"ms": 0.001, "settle_ms": candidate_settle_ms},
                    burst=(1, index),
                )
            )
        return evidence

    hidden = checks.no_hidden_work(settling_after(0.0365))

    assert not hidden.passed and "after the candidate's calls had ended" in hidden.detail
    assert checks.no_hidden_work(settling_after(0.0065)).passed
    # Less than the rejection's floor: flagged.
    small = settling_after(0.035)
    assert checks.no_hidden_work(small).passed and "after the candidate's calls had ended" in checks.hidden_work(small)
    assert checks.hidden_work(settling_after(0.0065)) is None


def _drained(candidate_settle_ms: float, *, calls: int = 4, eager_ms: float = 0.007, candidate_ms: float = 0.002) -> dict:
    """The verdict of `_drained_evidence`."""
    evidence = _drained_evidence(candidate_settle_ms, calls=calls, eager_ms=eager_ms, candidate_ms=candidate_ms)
    return scoring.verdict(evidence, plan=Plan(bootstrap_resamples=200), limits=Limits())


def _drained_evidence(
    candidate_settle_ms: float, *, calls: int = 4, eager_ms: float = 0.007, candidate_ms: float = 0.002
) -> Evidence:
    """A CUDA verification of six steady rounds, bursts of `calls` calls: eager's calls 7 us each, the
    candidate's 2 us on the calling stream, each call followed by a drain `candidate_settle_ms` long
    (eager's: 6 us, the host's wake-up)."""
    evidence = _evidence()
    evidence.device = "cuda"
    evidence.steady = {"rounds": 6, "stopped_by": "interval"}
    for number in range(1, 7):
        for who, ms, settle in (("eager", eager_ms, 0.006), (CANDIDATE, candidate_ms, candidate_settle_ms)):
            for index in range(calls):
                jitter = 1 + 0.002 * ((number + index) % 3)
                timing = {"ms": ms * jitter, "settle_ms": settle}
                evidence.calls.append(Call(who, STEADY, 0, {"ok": True}, ms, timing=timing, burst=(number, index)))
            evidence.bursts.append(
                {
                    "who": who,
                    "phase": STEADY,
                    "round": number,
                    "calls": calls,
                    "wall_ms": max(4.0, calls * ms + 1.0),
                    "sum_ms": calls * ms,
                    "leftover_ms": 0.0,
                }
            )
    return evidence


def test_work_left_below_the_rejection_gains_nothing():
    """A product of a few microseconds left on a side stream, below no_hidden_work's floor, read 3.4x over
    eager on an H200 (tests/harness/candidates/gpu_side_stream.py) while it was only flagged. Each call is
    charged its drain beyond eager's where the flag sees it: the speedup is what all its work costs. A
    drain within the hosts' wake-ups (0.5 us) is charged nothing."""
    hidden = _drained(0.006 + 0.005)
    honest = _drained(0.006 + 0.0005)

    passed = {c["name"]: c["passed"] for c in hidden["checks"]}
    assert passed["no_hidden_work"] and "hidden_work" in hidden["flags"]
    steady = hidden["timing"]["measures"]["steady_state"]
    assert abs(steady["candidate"]["leftover_charged_us"] - 5.0) < 1e-6
    assert 0.95 < hidden["timing"]["speedups"]["eager"] < 1.05
    assert honest["timing"]["measures"]["steady_state"]["candidate"]["leftover_charged_us"] == 0.0
    assert 3.4 < honest["timing"]["speedups"]["eager"] < 3.6


def test_work_left_by_long_calls_is_judged_in_bursts_of_one_call():
    """Calls of 10 ms or more make bursts of one call, six in a steady state: work left on a side stream
    after each (25 ms after a 30 ms call) is rejected, not left unjudged for want of samples."""
    hidden = _drained(25.0, calls=1, eager_ms=60.0, candidate_ms=30.0)
    honest = _drained(0.006, calls=1, eager_ms=60.0, candidate_ms=30.0)

    first = next(c for c in hidden["checks"] if not c["passed"])
    assert (first["name"], hidden["status"]) == ("no_hidden_work", "rejected")
    passed = {c["name"]: c["passed"] for c in honest["checks"]}
    assert passed["no_hidden_work"] and 1.9 < honest["timing"]["speedups"]["eager"] < 2.1
