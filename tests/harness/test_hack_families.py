"""One hostile candidate per hack family in DEVELOPERS.md: each is rejected or incorrect, and the
reason names the check that caught it."""

from pathlib import Path

import pytest

from tests.harness.conftest import CANDIDATES, REPO, failed_check, verify

FAMILIES = [
    # (problem, candidate, status, check)
    ("matmul", "hack_lazy_tensor", "rejected", "output_is_plain_tensor"),
    ("always_zero", "hack_stored_constant", "rejected", "output_owns_storage"),
    ("always_zero", "hack_broadcast_constant", "rejected", "output_elements_distinct"),
    ("matmul", "hack_reused_buffer", "rejected", "output_owns_storage"),
    ("matmul", "hack_cached_result", "incorrect", "outputs_match_reference"),
    ("matmul", "hack_timing_aware", "incorrect", "timed_outputs_match_reference"),
    ("matmul", "hack_background_thread", "rejected", "no_background_threads"),
    ("matmul", "hack_pool_thread", "rejected", "no_background_threads"),
    ("matmul", "hack_background_process", "rejected", "no_background_processes"),
    ("matmul", "hack_patched_clock", "rejected", "harness_intact"),
    ("matmul", "hack_patched_torch", "rejected", "harness_intact"),
    ("matmul", "hack_disguised_patch", "rejected", "harness_intact"),
    ("matmul", "hack_function_mode", "rejected", "no_global_hooks"),
    ("matmul", "hack_problem_tamper", "rejected", "problem_intact"),
    ("matmul", "hack_redefined_inputs", "incorrect", "outputs_match_reference"),
    ("matmul", "hack_memory_snooping", "incorrect", "outputs_match_reference"),
    ("matmul", "hack_input_mutation", "rejected", "inputs_unmodified"),
    ("relu", "hack_output_is_input", "rejected", "output_owns_storage"),
    ("matmul", "hack_nan_output", "incorrect", "outputs_finite"),
    ("tiny_mean", "hack_tiny_outputs", "incorrect", "outputs_match_reference"),
    ("matmul", "float8_matmul", "incorrect", "outputs_match_reference"),
    ("matmul", "hack_protocol_forgery", "rejected", "protocol_intact"),
    ("rnn_cell", "hack_rnn_cell_forgets_state", "incorrect", "outputs_match_reference"),
]


@pytest.mark.parametrize("problem_name, candidate_name, status, check", FAMILIES, ids=[f[1] for f in FAMILIES])
def test_hostile_candidate_is_caught_by_the_named_check(problem_name, candidate_name, status, check):
    verdict = verify(problem_name, candidate_name)

    assert (verdict["status"], failed_check(verdict)) == (status, check), verdict["reason"]
    assert verdict["reason"].startswith(f"{check}:")


def test_unwritten_output_is_incorrect_because_of_the_poison():
    verdict = verify("matmul", "hack_unwritten_output")

    assert verdict["status"] == "incorrect"
    assert failed_check(verdict) in ("outputs_finite", "outputs_match_reference"), verdict["reason"]
    assert verdict["reason"].startswith(f"{failed_check(verdict)}:")


def test_lazy_tensor_verdict_names_the_subclass():
    verdict = verify("matmul", "hack_lazy_tensor")

    assert "LazyMatmul" in verdict["reason"]


def test_forged_timer_is_caught_by_the_parents_own_clock():
    # The parent judges reported times against its own clock only with enough timed rounds.
    verdict = verify("row_sums", "hack_forged_timer", plan={"min_samples": 10, "max_samples": 12})

    assert (verdict["status"], failed_check(verdict)) == ("rejected", "clock_consistent"), verdict["reason"]
    assert verdict["reason"].startswith("clock_consistent:") and "the timer was tampered with" in verdict["reason"]


def test_every_hostile_candidate_is_tested_here_and_documented_with_its_family():
    hostile = sorted(path.stem for path in CANDIDATES.glob("hack_*.py"))
    tests = Path(__file__).read_text()
    developers = (REPO / "DEVELOPERS.md").read_text()

    assert [name for name in hostile if f'"{name}"' not in tests] == []
    assert [name for name in hostile if f"`{name}`" not in developers] == []
