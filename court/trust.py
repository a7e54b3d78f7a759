"""The trust report: which reward-hack families the harness defends, in a kernel author's words.

One row per family: the trick, the checks (court/check_meanings.py) or flags (court/flag_meanings.py) that close it,
the harness version since which it holds, and the tests that prove it, named by pytest node id. The
tests' results are never typed here: the suite's plugin (tests/trust_results.py) writes each named
test's last outcome to a file (settings.TRUST_RESULTS), which the page and /api/trust/ read, and a
run fails when a row names a test that does not exist or that failed in that run.

Pure data and plain Python: the suite's plugin imports it on hosts without Django.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from court import check_meanings, flag_meanings

# A family is closed by a check (the verdict is rejected or incorrect), only flagged (verified, with a
# warning beside its number), or not defended (the row says why).
CLOSED, FLAGGED, OPEN = "closed", "flagged", "not defended"

_HACK = "tests/harness/test_hack_families.py::test_hostile_candidate_is_caught_by_the_named_check[{}]"
_BURST = "tests/harness/test_hack_families.py::test_candidate_that_tells_a_burst_apart_gains_nothing[{}]"
_FAMILIES_FILE = "tests/harness/test_hack_families.py::"
_FLAGS_FILE = "tests/harness/test_flags.py::"
_SANDBOX_FILE = "tests/harness/test_sandbox.py::"


def _hack(*candidates: str) -> tuple[str, ...]:
    return tuple(_HACK.format(candidate) for candidate in candidates)


@dataclass(frozen=True)
class Family:
    name: str  # in a kernel author's words
    trick: str  # an example of the trick
    closed_by: tuple[str, ...]  # harness checks or flags, by name
    since: str  # the HARNESS_VERSION since which the defence holds ("" where none does)
    tests: tuple[str, ...]  # pytest node ids of the tests that prove it
    defence: str = CLOSED
    why: str = ""  # how the named checks close it, or why it is not defended

    @property
    def anchor(self) -> str:
        return "family-" + "".join(c if c.isalnum() else "-" for c in self.name.lower()).strip("-")


FAMILIES = [
    Family(
        "Work left on another stream",
        "Launch the kernel on a side stream and return at once, so the timer stops before the work is done.",
        ("no_hidden_work", "hidden_work"),
        "9",
        (
            "tests/harness/test_checks.py::test_work_left_past_each_calls_end_is_rejected",
            "tests/harness/test_checks.py::test_work_left_after_every_burst_is_rejected_and_a_little_is_flagged",
            "tests/harness/test_checks.py::test_work_left_below_the_rejection_gains_nothing",
            "tests/harness/test_gpu.py::test_work_hidden_on_another_stream_is_rejected",
        ),
        why=(
            "The device is drained after every call and burst; work still running then is rejected, and a little is "
            "flagged and added to each call's time."
        ),
    ),
    Family(
        "Background threads and processes",
        "Return at once and finish the work on a thread or a helper process after the timer stopped.",
        ("no_background_threads", "no_background_processes"),
        "1",
        (
            *_hack("hack_background_thread", "hack_pool_thread", "hack_frameless_burner", "hack_background_process"),
            _FAMILIES_FILE + "test_a_daemon_left_spinning_outside_the_candidates_process_tree_is_rejected",
        ),
        why="Threads and processes still alive after the call are listed from outside the sandbox, frameless ones too.",
    ),
    Family(
        "Lazy or deferred outputs",
        "Return a tensor subclass that computes only when read, or leave a hook behind that fills the output later.",
        ("output_is_plain_tensor", "output_settled", "no_global_hooks"),
        "1",
        (
            *_hack("hack_lazy_tensor", "hack_deferred_finalizer", "hack_deferred_gc_callback", "hack_deferred_dispatch_mode"),
            _FAMILIES_FILE + "test_output_finished_by_code_left_behind_is_captured_unwritten[hack_deferred_atexit]",
        ),
        why="The output's bytes are captured as the call returns, before anything the candidate left can run.",
    ),
    Family(
        "Patched timers or comparison",
        "Replace time.perf_counter, CUDA events, torch.allclose or a harness function in the candidate's process.",
        ("harness_intact", "clock_consistent"),
        "1",
        (
            *_hack("hack_patched_clock", "hack_patched_torch", "hack_disguised_patch"),
            "tests/harness/test_control.py::test_times_under_reported_against_the_parents_clock_are_rejected",
        ),
        why="Times come from the call site in C and must fit the parent's own clock; comparison runs in another process.",
    ),
    Family(
        "Forged result channels",
        "Write a reply or a timing record of its own to the harness's private channel, or print a fake verdict.",
        ("protocol_intact",),
        "1",
        (
            *_hack(
                "hack_protocol_forgery", "hack_forged_timing_record", "hack_replaced_timing_pipe", "hack_reopened_timing_link"
            ),
            _FAMILIES_FILE + "test_times_rewritten_in_the_replies_change_nothing",
        ),
        why="Every request carries a nonce and every timing record a tag under a key the candidate cannot read.",
    ),
    Family(
        "Stale memory reused from the reference",
        "Return torch.empty and hope the allocator hands back memory where the reference just wrote the answer.",
        ("outputs_finite", "outputs_match_reference"),
        "1",
        (
            _FAMILIES_FILE + "test_unwritten_output_is_incorrect_because_of_the_poison",
            _SANDBOX_FILE + "test_candidate_cannot_read_the_reference_process",
        ),
        why="The reference runs in another sandbox, and the allocator is poisoned with NaN before each call.",
    ),
    Family(
        "Mutated inputs",
        "Use the inputs as scratch space, or return an input modified in place.",
        ("inputs_unmodified", "output_owns_storage"),
        "1",
        _hack("hack_input_mutation", "hack_output_is_input"),
        why="The call site compares every input's bytes after the call with what arrived.",
    ),
    Family(
        "Outputs cached by pointer, shape or call count",
        "Compute once per input pointer, shape or call number and return the stored copy ever after.",
        ("outputs_match_reference", "output_owns_storage"),
        "1",
        _hack("hack_cached_result", "hack_reused_buffer", "hack_rotating_buffers"),
        why="Inputs are fresh on every call, and an output that is an earlier one's memory is rejected.",
    ),
    Family(
        "Predicted seeds",
        "Guess the seed the inputs are drawn from, so the answer can be computed ahead of time.",
        ("outputs_match_reference",),
        "7",
        (
            "tests/harness/test_honest.py::test_every_seed_comes_from_the_operating_systems_secret_source",
            *_hack("hack_redefined_inputs"),
        ),
        why="Every seed is drawn from the operating system's secret source, in a process the candidate cannot see.",
    ),
    Family(
        "Constant outputs under a loose tolerance",
        "Return zeros or a stored constant where the answer is tiny or never changes, and let atol=1e-2 pass it.",
        ("output_elements_distinct", "output_owns_storage", "outputs_match_reference", "tiny_outputs", "degenerate_problem"),
        "1",
        _hack("hack_stored_constant", "hack_broadcast_constant", "hack_tiny_outputs", "hack_heavy_tail_zeros"),
        why="There is no absolute tolerance: error is relative to each element plus the output's scale.",
    ),
    Family(
        "Shapes hard-coded to the test inputs",
        "Write a kernel that is right only at the benchmark's published sizes.",
        ("shape_specialized",),
        "1",
        (_FLAGS_FILE + "test_candidate_right_only_at_the_published_sizes_is_flagged",),
        defence=FLAGGED,
        why="Run again at other sizes of the problem's constants: wrong there, it is flagged (a kernel may be specialised).",
    ),
    Family(
        "Precision lowered (TF32, fp16)",
        "Switch TF32 on, or compute in half precision or float8, and hope the tolerance is loose.",
        ("reduced_precision", "global_state_changed", "outputs_match_reference"),
        "1",
        (
            *_hack("float8_matmul"),
            _FLAGS_FILE + "test_bfloat16_candidate_is_verified_as_reduced_precision",
            _FLAGS_FILE + "test_global_state_is_flagged_and_kept_from_inputs_and_baselines",
        ),
        defence=FLAGGED,
        why="Within half precision's tolerance it is verified and flagged with its tier; beyond it, incorrect.",
    ),
    Family(
        "The library call wrapped unchanged",
        "Call the reference's own torch operators inside a 'kernel' and claim the noise as a speedup.",
        ("same_kernels_as_reference",),
        "1",
        (
            _FLAGS_FILE + "test_candidate_running_the_references_operators_is_flagged",
            _FLAGS_FILE + "test_the_unchanged_forward_is_never_a_win",
        ),
        defence=FLAGGED,
        why="The profiler sees exactly the reference's kernels: its speedup is stated as 1.0 and is never a win.",
    ),
    Family(
        "A fast path that never runs",
        "Ship a custom kernel in the source that is never called, while the reference's operators do the work.",
        ("same_kernels_as_reference",),
        "1",
        (_FLAGS_FILE + "test_a_custom_kernel_that_never_ran_is_named_so",),
        defence=FLAGGED,
        why="The profiler shows which kernels ran; the verdict names the custom kernel that never did.",
    ),
    Family(
        "Detecting warm-up or the checked call",
        "Be right on the first calls, which are likely checked, and skip the work once it is likely timed.",
        ("timed_outputs_match_reference",),
        "1",
        (*_hack("hack_timing_aware"), _BURST.format("hack_burst_aware"), _BURST.format("hack_burst_thread")),
        why="There is no separate checking phase: timed calls are chosen in secret after they return and compared in full.",
    ),
    Family(
        "Drifting after N correct calls",
        "Answer right for the first N calls, then return zeros or a stale answer.",
        ("timed_outputs_match_reference", "outputs_match_reference"),
        "1",
        (*_hack("hack_timing_aware", "hack_rnn_cell_forgets_state"),),
        why="Any call may be compared, drawn after it returned, including the last of every burst.",
    ),
    Family(
        "Persisting-L2 tricks",
        "Pin the inputs or weights in the L2 cache with a persisting access-policy window, so each call reads cache.",
        (),
        "",
        (),
        defence=OPEN,
        why=(
            "Not tested: the harness writes a buffer twice the L2's size before each timed call, but no hostile "
            "candidate in the suite sets aside persisting L2 lines, which that flush may not evict (a GPU-only trick)."
        ),
    ),
    Family(
        "Reading the expected answer from memory",
        "Walk gc, frames or globals of its process for the reference's output or the harness's objects.",
        ("outputs_match_reference", "output_owns_storage"),
        "1",
        (*_hack("hack_memory_snooping"), _SANDBOX_FILE + "test_candidate_cannot_read_the_reference_process"),
        why="The reference output is never in the candidate's process; the reference runs in a sandbox it cannot see.",
    ),
    Family(
        "Replacing installed packages",
        "Overwrite torch or a harness module on disk, or plant a package on the path, for the next verification.",
        ("sandbox_in_force",),
        "7",
        (
            _SANDBOX_FILE + "test_a_candidate_running_as_root_reaches_nothing_of_the_host",
            _SANDBOX_FILE + "test_nothing_the_candidate_writes_reaches_the_harness_or_a_later_verification",
        ),
        why="The sandbox sees /usr and the Python environment read-only; without the sandbox the harness refuses.",
    ),
    Family(
        "Tampering with the problem",
        "Change the problem's constants or get_inputs through sys.modules so the harness makes easier inputs.",
        ("outputs_match_reference",),
        "1",
        (_FAMILIES_FILE + "test_the_candidate_process_holds_no_problem_to_tamper_with", *_hack("hack_redefined_inputs")),
        why="Inputs are made in the reference process and arrive as data: there is nothing to tamper with.",
    ),
    Family(
        "Physically impossible speedups",
        "Skip work the problem requires (or use algebra the reference does not) and report a time under the device's floor.",
        ("beyond_speed_of_light",),
        "1",
        (_FLAGS_FILE + "test_candidate_faster_than_the_flop_floor_is_flagged",),
        defence=FLAGGED,
        why="Its time is compared with the problem's FLOPs and bytes at the device's measured rates.",
    ),
    Family(
        "Weak baselines inflating ratios",
        "Compare against slow eager PyTorch only, or slow the baselines down from the candidate's own process.",
        ("quiet_while_baselines_run", "control_off"),
        "7",
        (
            _FAMILIES_FILE + "test_a_candidate_slowing_torch_in_its_own_process_cannot_slow_the_baselines",
            "tests/harness/test_checks.py::test_a_candidate_busy_while_the_baselines_run_is_rejected",
            "tests/harness/test_control.py::test_a_host_that_times_the_candidates_process_faster_states_no_win",
        ),
        why=(
            "Baselines are eager, torch.compile (two modes) and a CUDA graph, timed in a process that never loaded "
            "the candidate, beside an A/A control."
        ),
    ),
    Family(
        "Native code forging a time inside its process",
        "A compiled extension reads the call site's key from its own memory and tags a time of its own.",
        ("clock_consistent",),
        "",
        (),
        defence=OPEN,
        why=(
            "Out of scope (below): native code has its process's full rights. A forged time must still fit the "
            "parent's own clock, which bounds it, but a determined forgery inside the process is not detected."
        ),
    ),
]

# What the harness does not defend, from DEVELOPERS.md's threat model, in plain words.
OUT_OF_SCOPE = [
    (
        "Native code in the candidate's own process",
        "A compiled extension (load_inline, Triton, ctypes) runs with all the rights of its process inside the "
        "sandbox: it can read and write that process's memory, start threads Python cannot see, or patch the CUDA "
        "driver. The sandbox keeps it from everything the verdict trusts outside the process (the reference, the "
        "baselines, the parent's clock), and its process is frozen while anything else is measured, but a "
        "determined forgery of a time or a captured output inside the process is not detected.",
    ),
    (
        "What the candidate's process says about itself",
        "Facts its Python reports (threads, patched functions, an output's memory) run beside the candidate, which "
        "can rewrite them: they help name a hack, they do not prove its absence.",
    ),
    (
        "GPU work queued just before a freeze",
        "Between a reply and the freeze (about half a millisecond) a thread can still queue GPU work, which then runs "
        "while a baseline is timed: the freeze stops the host, not the device.",
    ),
    (
        "A pasted problem judging itself",
        "A pasted problem is its own reference, baselines and inputs: it can fool verdicts on itself only. Pastes "
        "stay off the leaderboard and its statistics until staff promote them.",
    ),
    (
        "Disk between watches",
        "A build cache is checked about once a second while it runs: within a second a candidate can write past its bound.",
    ),
    (
        "Side channels and kernel exploits",
        "Timing of shared caches, the device's clocks, and exploits of the operating system's kernel; no seccomp or "
        "Landlock filter is applied beyond the sandbox's namespaces.",
    ),
]


def explanation(name: str) -> tuple[str, str]:
    """("check" or "flag", its meaning) for a harness check or flag named by a family."""
    if name in check_meanings.CHECKS:
        return "check", check_meanings.describe(name)
    if name in flag_meanings.FLAGS:
        return "flag", flag_meanings.describe(name)
    raise KeyError(f"{name} is neither a check of court/check_meanings.py nor a flag of court/flag_meanings.py")


def named_tests() -> list[str]:
    """Every test a family names, once each, in the table's order."""
    return list(dict.fromkeys(test for family in FAMILIES for test in family.tests))


def read_results(path: Path) -> dict:
    """The suite's last results of the named tests, as the plugin wrote them ({} when none were)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


def report(results: dict) -> dict:
    """The trust report as data: the page renders it and /api/trust/ returns it."""
    outcomes = results.get("tests", {})
    families = []
    for family in FAMILIES:
        families.append(
            {
                "name": family.name,
                "anchor": family.anchor,
                "trick": family.trick,
                "defence": family.defence,
                "why": family.why,
                "since": family.since or None,
                "closed_by": [{"name": name, "kind": explanation(name)[0]} for name in family.closed_by],
                "tests": [{"id": test, **_last_result(outcomes.get(test))} for test in family.tests],
            }
        )
    used = dict.fromkeys(name for family in FAMILIES for name in family.closed_by)
    return {
        "results_written_at": results.get("written_at"),
        "families": families,
        "explanations": [
            {"name": name, "kind": kind, "meaning": meaning} for name in used for kind, meaning in [explanation(name)]
        ],
        "out_of_scope": [{"name": name, "why": why} for name, why in OUT_OF_SCOPE],
    }


def _last_result(entry: dict | None) -> dict:
    if not entry:
        return {"outcome": None, "at": None}
    return {"outcome": entry.get("outcome"), "at": entry.get("at")}
