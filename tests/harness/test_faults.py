"""A candidate that does not load, crashes, hangs, exhausts memory or answers the wrong shape gets
the status that says so, and the harness lives on to say it."""

import time

from tests.harness.conftest import SMALL_LIMITS, SMALL_PLAN, candidate, failed_check, problem


def test_syntax_error_is_an_error_naming_the_line(verifier):
    verdict = verifier("matmul", "fault_syntax_error")

    assert (verdict["status"], failed_check(verdict)) == ("error", "candidate_parses")
    assert "line 5" in verdict["reason"]


def test_missing_model_new_is_an_error_before_any_process_starts(verifier):
    verdict = verifier("matmul", "fault_no_model_new")

    assert (verdict["status"], failed_check(verdict)) == ("error", "defines_model_new")
    assert "does not occur in its source" in verdict["reason"]
    assert verdict["cost"].get("steps_s", {}) == {}


def test_model_new_that_is_not_a_class_is_an_error_after_loading(verifier):
    verdict = verifier("matmul", "fault_model_new_not_a_class")

    assert (verdict["status"], failed_check(verdict)) == ("error", "defines_model_new")
    assert "start_up" in verdict["cost"]["steps_s"]


def test_exception_in_init_is_an_error(verifier):
    verdict = verifier("matmul", "fault_raises_in_init")

    assert (verdict["status"], failed_check(verdict)) == ("error", "candidate_instantiates")
    assert "unsupported configuration" in verdict["reason"]


def test_exception_in_forward_is_an_error(verifier):
    verdict = verifier("matmul", "fault_raises")

    assert (verdict["status"], failed_check(verdict)) == ("error", "candidate_runs")
    assert "the kernel is not finished" in verdict["reason"]


def test_segfault_is_crashed(verifier):
    verdict = verifier("matmul", "fault_segfault")

    assert (verdict["status"], failed_check(verdict)) == ("crashed", "candidate_runs")
    assert "SIGSEGV" in verdict["reason"]


def test_exit_mid_call_is_crashed(verifier):
    verdict = verifier("matmul", "fault_exit")

    assert (verdict["status"], failed_check(verdict)) == ("crashed", "candidate_runs")
    assert "exit code 0" in verdict["reason"]


def test_a_first_call_that_hangs_ends_at_the_first_calls_limit_not_the_builds(verifier):
    # Its source names nothing that compiles at a first call (torch.compile, Triton, load_inline).
    began = time.monotonic()
    verdict = verifier("matmul", "fault_hang", limits={"first_call_time_s": 4, "call_time_min_s": 2, "build_time_s": 600})

    assert (verdict["status"], failed_check(verdict)) == ("timeout", "candidate_runs")
    assert "the first call's limit (4 s" in verdict["reason"]
    assert time.monotonic() - began < 60


def test_a_call_that_hangs_after_the_build_ends_at_a_limit_scaled_to_the_reference(verifier):
    verdict = verifier("matmul", "fault_hang_after_build", limits={"call_time_min_s": 3, "first_call_time_s": 30})

    assert (verdict["status"], failed_check(verdict)) == ("timeout", "candidate_runs")
    assert "the call limit (3 s: 100 times the reference's" in verdict["reason"]


def test_a_problem_whose_inputs_cannot_fit_is_refused_before_any_process_starts(verifier):
    source = problem("matmul").replace("M = 32", "M = 50000").replace("K = 48", "K = 50000")

    began = time.monotonic()
    verdict = verifier.verify_sources(
        source, candidate("honest_matmul"), plan=SMALL_PLAN, limits={**SMALL_LIMITS, "memory_bytes": 2**30}
    )

    assert (verdict["status"], failed_check(verdict)) == ("error", "problem_fits")
    assert "an estimated 9.3 GiB (50000x50000 float32, 50000x24 float32)" in verdict["reason"]
    assert verdict["sandbox"] == {} and time.monotonic() - began < 5


def test_hang_while_building_is_a_timeout_at_load(verifier):
    verdict = verifier("matmul", "fault_hang_at_import", limits={"build_time_s": 3})

    assert (verdict["status"], failed_check(verdict)) == ("timeout", "candidate_loads")


def test_memory_bomb_is_an_error_naming_memory(verifier):
    verdict = verifier("matmul", "fault_memory_bomb", limits={"memory_bytes": 2 * 2**30})

    assert (verdict["status"], failed_check(verdict)) == ("error", "candidate_runs")
    assert "memory" in verdict["reason"]


def test_wrong_shape_is_incorrect(verifier):
    verdict = verifier("matmul", "fault_wrong_shape")

    assert (verdict["status"], failed_check(verdict)) == ("incorrect", "output_shape")
    assert "[24, 32]" in verdict["reason"] and "[32, 24]" in verdict["reason"]


def test_wrong_dtype_is_incorrect(verifier):
    verdict = verifier("matmul", "fault_wrong_dtype")

    assert (verdict["status"], failed_check(verdict)) == ("incorrect", "output_dtype")


def test_printed_fake_verdict_is_never_taken_for_one(verifier):
    verdict = verifier("matmul", "fault_fake_verdict")

    assert (verdict["status"], failed_check(verdict)) == ("crashed", "candidate_loads")
    assert '"status": "verified"' in verdict["log_excerpt"]


def test_a_candidate_left_no_time_to_be_timed_is_a_timeout_not_verified(verifier):
    # The timing loop stops a minute before the wall limit: at 60 s it starts with no time left. On the
    # H200, a candidate that waited 367 s for the device was `verified` with no speed (benchmarks/RESULTS.md).
    verdict = verifier("linear_relu", "honest_linear_relu", limits={"wall_time_s": 60})

    assert verdict["status"] == "timeout", verdict["reason"]
    assert verdict["reason"].startswith("timing_complete: the wall limit (60 s) came before the timing did: 0 timed samples")
    assert "timing" not in verdict or not verdict["timing"].get("speedups")


def test_a_failing_progress_hook_is_not_evidence_against_the_candidate(verifier):
    # A worker writes each stage to its database; a database restart mid-verification must not
    # turn into a verdict on the kernel (it once counted as the candidate breaking the protocol).
    seen = []

    def database_away(stage):
        seen.append(stage)
        if stage != "building":
            raise ConnectionError("the database is away")

    verdict = verifier("linear_relu", "honest_linear_relu", on_progress=database_away)

    assert verdict["status"] == "verified", verdict["reason"]
    assert {"checking", "timing"} <= set(seen)
