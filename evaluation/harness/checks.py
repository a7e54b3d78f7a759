"""The checks, in the order they decide a verdict. Read this list to audit the harness.

Each check is a small function of the evidence returning an Outcome, or None where it did not
run (its evidence does not exist). The first check that fails decides the status and its detail
becomes the verdict's reason; integrity checks come before fault and correctness checks, so a
candidate that cheats and then crashes is `rejected`, not `crashed`.

The checks live by family: fault_checks.py (the problem, the sandbox and the candidate ran at all),
integrity_checks.py (what the candidate left behind or returned), timing_checks.py (its times and
the work it left on the device), correctness_checks.py (its outputs against the reference's).
Flags (flags.py) come after: notable findings that do not change the status.
"""

from collections.abc import Callable
from dataclasses import dataclass

from evaluation.harness.check_outcome import Outcome, fail, ok
from evaluation.harness.correctness_checks import (
    output_device,
    output_dtype,
    output_shape,
    output_structure,
    outputs_finite,
    outputs_match_reference,
    proof_inputs,
    timed_outputs_match_reference,
    within_tolerance,
)
from evaluation.harness.evidence import Evidence
from evaluation.harness.fault_checks import (
    candidate_instantiates,
    candidate_loads,
    candidate_parses,
    candidate_runs,
    defines_model_new,
    problem_fits,
    problem_runs,
    sandbox_in_force,
)
from evaluation.harness.integrity_checks import (
    HOOKS,
    PRECISION_SWITCHES,
    harness_intact,
    inputs_unmodified,
    lowers_precision,
    no_background_processes,
    no_background_threads,
    no_global_hooks,
    output_elements_distinct,
    output_is_plain_tensor,
    output_owns_storage,
    output_settled,
    protocol_intact,
    quiet_between_calls,
    quiet_while_baselines_run,
    state_changes,
)
from evaluation.harness.timing_checks import (
    charged_rounds,
    clock_bound,
    clock_consistent,
    hidden_work,
    leftover_counted_ms,
    no_hidden_work,
)
from evaluation.harness.verdict import ERROR, INCORRECT, REJECTED
from evaluation.harness.verdict import Check as CheckEntry

# What other modules read from here besides the table (flags.py, scoring.py, the pipeline).
__all__ = [
    "CHECKS",
    "HOOKS",
    "PRECISION_SWITCHES",
    "Check",
    "Outcome",
    "blocking_failure",
    "charged_rounds",
    "clock_bound",
    "fail",
    "hidden_work",
    "leftover_counted_ms",
    "lowers_precision",
    "no_hidden_work",
    "ok",
    "run_checks",
    "state_changes",
    "within_tolerance",
]


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # the status a failure gives, unless the outcome overrides it
    run: Callable[[Evidence], Outcome | None]


CHECKS = [
    Check("candidate_parses", ERROR, candidate_parses),
    Check("sandbox_in_force", ERROR, sandbox_in_force),
    Check("problem_fits", ERROR, problem_fits),
    Check("problem_runs", ERROR, problem_runs),
    Check("protocol_intact", REJECTED, protocol_intact),
    Check("harness_intact", REJECTED, harness_intact),
    Check("no_global_hooks", REJECTED, no_global_hooks),
    Check("no_background_threads", REJECTED, no_background_threads),
    Check("no_background_processes", REJECTED, no_background_processes),
    Check("output_is_plain_tensor", REJECTED, output_is_plain_tensor),
    Check("output_elements_distinct", REJECTED, output_elements_distinct),
    Check("output_owns_storage", REJECTED, output_owns_storage),
    Check("output_settled", REJECTED, output_settled),
    Check("inputs_unmodified", REJECTED, inputs_unmodified),
    Check("quiet_while_baselines_run", REJECTED, quiet_while_baselines_run),
    Check("quiet_between_calls", REJECTED, quiet_between_calls),
    Check("clock_consistent", REJECTED, clock_consistent),
    Check("no_hidden_work", REJECTED, no_hidden_work),
    Check("candidate_loads", ERROR, candidate_loads),
    Check("defines_model_new", ERROR, defines_model_new),
    Check("candidate_instantiates", ERROR, candidate_instantiates),
    Check("candidate_runs", ERROR, candidate_runs),
    Check("output_structure", INCORRECT, output_structure),
    Check("output_shape", INCORRECT, output_shape),
    Check("output_dtype", INCORRECT, output_dtype),
    Check("output_device", INCORRECT, output_device),
    Check("outputs_finite", INCORRECT, outputs_finite),
    Check("outputs_match_reference", INCORRECT, outputs_match_reference),
    Check("timed_outputs_match_reference", INCORRECT, timed_outputs_match_reference),
    Check("proof_inputs", INCORRECT, proof_inputs),
]


def run_checks(evidence: Evidence) -> tuple[list[CheckEntry], dict[str, str] | None]:
    """Every check that ran, as verdict entries, and the first failure (with its status)."""
    entries: list[CheckEntry] = []
    first: dict[str, str] | None = None
    for check in CHECKS:
        outcome = check.run(evidence)
        if outcome is None:
            continue
        entries.append({"name": check.name, "passed": outcome.passed, "detail": outcome.detail})
        if not outcome.passed and first is None:
            first = {"name": check.name, "status": outcome.status or check.status, "detail": outcome.detail}
    return entries, first


def blocking_failure(evidence: Evidence) -> dict[str, str] | None:
    """The first failure so far, which ends the run early: nothing later can undo it."""
    return run_checks(evidence)[1]
