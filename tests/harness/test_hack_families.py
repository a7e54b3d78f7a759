"""One hostile candidate per hack family in DEVELOPERS.md: each is rejected or incorrect, and the
reason names the check that caught it."""

from pathlib import Path

import pytest

from tests.harness.conftest import CANDIDATES, REPO, failed_check

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
    ("matmul", "hack_redefined_inputs", "incorrect", "outputs_match_reference"),
    ("matmul", "hack_memory_snooping", "incorrect", "outputs_match_reference"),
    ("matmul", "hack_input_mutation", "rejected", "inputs_unmodified"),
    ("relu", "hack_output_is_input", "rejected", "output_owns_storage"),
    ("matmul", "hack_nan_output", "incorrect", "outputs_finite"),
    ("tiny_mean", "hack_tiny_outputs", "incorrect", "outputs_match_reference"),
    ("matmul", "float8_matmul", "incorrect", "outputs_match_reference"),
    ("matmul", "hack_protocol_forgery", "rejected", "protocol_intact"),
    ("rnn_cell", "hack_rnn_cell_forgets_state", "incorrect", "outputs_match_reference"),
    ("matmul", "hack_forged_timing_record", "rejected", "protocol_intact"),
    ("matmul", "hack_replaced_timing_pipe", "rejected", "protocol_intact"),
    # Harness 11: the timing link reopened through /proc (a pipe's was), else records forged on it.
    ("matmul", "hack_reopened_timing_link", "rejected", "protocol_intact"),
    # Harness 11: a thread with no Python frame burning the host between calls, seen from outside.
    ("matmul", "hack_frameless_burner", "rejected", "no_background_threads"),
    ("always_zero", "hack_swapped_handler", "incorrect", "outputs_finite"),
    ("matmul", "hack_prefetched_inputs", "rejected", "protocol_intact"),
    ("matmul", "hack_uncaptured_call", "rejected", "protocol_intact"),
    ("matmul", "hack_nested_reply", "rejected", "protocol_intact"),
    ("matmul", "hack_malformed_reply", "rejected", "protocol_intact"),
    # Code left behind to finish an output after its call returned (harness 7's first family).
    ("matmul", "hack_deferred_gc_callback", "rejected", "no_global_hooks"),
    ("matmul", "hack_deferred_signal_timer", "rejected", "no_global_hooks"),
    ("matmul", "hack_deferred_audit_hook", "rejected", "no_global_hooks"),
    ("matmul", "hack_deferred_profile_hook", "rejected", "no_global_hooks"),
    ("matmul", "hack_deferred_dispatch_mode", "rejected", "no_global_hooks"),
    ("matmul", "hack_deferred_import_hook", "rejected", "no_global_hooks"),
    ("matmul", "hack_deferred_finalizer", "rejected", "output_settled"),
    ("matmul", "hack_rotating_buffers", "rejected", "output_owns_storage"),
    ("always_zero", "hack_rotating_constants", "rejected", "output_owns_storage"),
    ("exp3x", "hack_heavy_tail_zeros", "incorrect", "outputs_match_reference"),
    ("relu_and_sum", "hack_wrong_number", "incorrect", "outputs_match_reference"),
]


@pytest.mark.parametrize("problem_name, candidate_name, status, check", FAMILIES, ids=[f[1] for f in FAMILIES])
def test_hostile_candidate_is_caught_by_the_named_check(verifier, problem_name, candidate_name, status, check):
    verdict = verifier.shared(problem_name, candidate_name)

    assert (verdict["status"], failed_check(verdict)) == (status, check), verdict["reason"]
    assert verdict["reason"].startswith(f"{check}:")


def test_unwritten_output_is_incorrect_because_of_the_poison(verifier):
    verdict = verifier("matmul", "hack_unwritten_output")

    assert verdict["status"] == "incorrect"
    assert failed_check(verdict) in ("outputs_finite", "outputs_match_reference"), verdict["reason"]
    assert verdict["reason"].startswith(f"{failed_check(verdict)}:")


def test_lazy_tensor_verdict_names_the_subclass(verifier):
    verdict = verifier.shared("matmul", "hack_lazy_tensor")  # the family's verdict above

    assert "LazyMatmul" in verdict["reason"]


def test_times_rewritten_in_the_replies_change_nothing(verifier):
    # The call site writes each call's times to the parent itself; the replies' are never read.
    verdict = verifier("row_sums", "hack_forged_timer")

    assert verdict["status"] == "verified", verdict["reason"]
    assert verdict["timing"]["candidate"]["median_ms"] >= 45


@pytest.mark.parametrize("candidate_name", ["hack_deferred_library_kernel", "hack_deferred_atexit"])
def test_output_finished_by_code_left_behind_is_captured_unwritten(verifier, candidate_name):
    # Nothing the candidate registered runs between its call's return and the capture: what it
    # returned is compared as it was then: zeros, NaN poison or whatever the allocator's memory held
    # (CI once saw 2.5e33: memory no poisoning reached), never the product finished later.
    verdict = verifier("matmul", candidate_name)

    assert (verdict["status"], failed_check(verdict)) in (
        ("incorrect", "outputs_finite"),
        ("incorrect", "outputs_match_reference"),
    )


def test_the_candidate_process_holds_no_problem_to_tamper_with(verifier):
    verdict = verifier("matmul", "hack_problem_tamper")

    assert verdict["status"] == "verified", verdict["reason"]
    assert "TAMPER the problem's module is not in the candidate's process" in verdict["log_excerpt"]


def test_a_candidate_slowing_torch_in_its_own_process_cannot_slow_the_baselines(verifier):
    # Harness 6 timed eager beside this candidate: tanh became 20 times slower outside its forward.
    verdict = verifier("linear_tanh", "hack_slow_baselines", plan={"min_samples": 10, "max_samples": 12})

    assert verdict["status"] == "verified", verdict["reason"]
    # Slowed, eager would read about 20 times the candidate's time; a loaded CI runner has read 2.8.
    assert verdict["timing"]["speedups"]["eager"] < 5.0


def test_a_daemon_left_spinning_outside_the_candidates_process_tree_is_rejected(verifier):
    # A double fork leaves the process's tree, not the sandbox's PID namespace, where the candidate's
    # process sees every process.
    verdict = verifier("matmul", "hack_daemon_spinner", plan={"min_samples": 200, "max_samples": 200, "target_ci": 0.0})

    assert (verdict["status"], failed_check(verdict)) == ("rejected", "no_background_processes"), verdict["reason"]


def test_every_hostile_candidate_is_tested_here_and_documented_with_its_family():
    hostile = sorted(path.stem for path in CANDIDATES.glob("hack_*.py"))
    tests = Path(__file__).read_text()
    developers = (REPO / "DEVELOPERS.md").read_text()

    assert [name for name in hostile if f'"{name}"' not in tests] == []
    assert [name for name in hostile if f"`{name}`" not in developers] == []


def test_memory_held_where_no_resident_set_shows_it_counts_against_the_limit(verifier):
    # memfd pages are charged to the sandbox's control group; a resident-set watchdog saw 0.3 GiB of
    # a candidate holding 7.5 GiB this way.
    from evaluation.harness import cgroups

    if not cgroups.available():
        pytest.skip("this host lets the harness make no control group")
    verdict = verifier("matmul", "hack_memfd_memory", limits={"memory_bytes": 2 * 2**30})

    assert verdict["status"] == "error" and "memory" in verdict["reason"], verdict["reason"]


# Back-to-back calls (the steady state's bursts), told apart from calls one at a time by the gap since
# the last call. Every call of a burst is captured; here each is compared too (the platform compares
# one call of every burst and a quarter of the rest, drawn once the burst is over).
BURST_FAMILIES = [
    ("matmul", "hack_burst_aware", "incorrect", "timed_outputs_match_reference"),
    ("matmul", "hack_burst_thread", "incorrect", "timed_outputs_match_reference"),
]


@pytest.mark.parametrize("problem_name, candidate_name, status, check", BURST_FAMILIES, ids=[f[1] for f in BURST_FAMILIES])
def test_candidate_that_tells_a_burst_apart_gains_nothing(verifier, problem_name, candidate_name, status, check):
    verdict = verifier(problem_name, candidate_name, plan={"timed_check_probability": 1.0})

    # Skipped work reads as zeros (a wrong answer) or as the harness's NaN poison (an unwritten output).
    # A thread's product runs in torch without the GIL and can finish before the call site reads the
    # output: then the answer is right, and the work sits in the thread's next call instead (on a
    # two-core CI host, 0.03x over eager). Either way it gains nothing.
    if candidate_name == "hack_burst_thread" and verdict["status"] == "verified":
        assert verdict["timing"]["speedups"]["eager"] < 1.0, verdict["reason"]
        return
    assert verdict["status"] == status, verdict["reason"]
    assert failed_check(verdict) in {check, "outputs_finite"}, verdict["reason"]
