"""What each harness check means when it decides a verdict, in one table: the family of what it
caught (the hack families of DEVELOPERS.md for integrity checks) and a sentence for whoever reads
the verdict. The audit of published kernels groups its rejections by these families.

tests/court/test_claims_audit.py fails on a harness check missing here.
"""

CHECKS = {
    "candidate_parses": ("does not load", "The candidate is not valid Python."),
    "sandbox_in_force": ("not run", "The OS sandbox was not in force, so the candidate was not run."),
    "problem_fits": ("not run", "The problem's inputs cannot fit the machine."),
    "problem_runs": ("not run", "The problem's own reference failed to run."),
    "protocol_intact": (
        "forged messages",
        "The candidate's process wrote to the harness's private channels (a forged reply, or a timing record "
        "without the call site's key).",
    ),
    "harness_intact": ("patched clock, torch or harness", "A function the harness or the baselines rely on was replaced."),
    "no_global_hooks": (
        "output finished after the call",
        "A hook or mode was left installed, to run inside later calls and the harness's own reads.",
    ),
    "no_background_threads": ("escaping the timer", "A thread was still working after the call returned."),
    "no_background_processes": ("escaping the timer", "A process was still running after the call returned."),
    "output_is_plain_tensor": (
        "lazy output",
        "The call returned a tensor subclass that defers the work until someone reads it.",
    ),
    "output_elements_distinct": ("stored constant", "The output is one value (or a few) broadcast to its shape."),
    "output_owns_storage": (
        "stored constant or reused buffer",
        "The output's memory belongs to the model, an input or an earlier output.",
    ),
    "output_settled": ("output finished after the call", "The output's bytes changed after the harness captured them."),
    "inputs_unmodified": ("mutated inputs", "The call wrote to its inputs."),
    "quiet_while_baselines_run": (
        "slowed baselines",
        "The candidate's processes used the CPU while a baseline was being timed.",
    ),
    "quiet_between_calls": (
        "escaping the timer",
        "The candidate's process kept working between its calls, while it had nothing to do.",
    ),
    "clock_consistent": ("forged times", "A call reported a time the harness's own clock rules out."),
    "no_hidden_work": (
        "escaping the timer",
        "Work was left running on the device after the call returned (another stream or thread).",
    ),
    "candidate_loads": ("does not load", "The candidate failed to import or build."),
    "defines_model_new": ("does not load", 'The candidate defines no ModelNew (CUDA-L1\'s placeholder "None" among them).'),
    "candidate_instantiates": ("does not load", "ModelNew could not be built from the problem's init inputs."),
    "candidate_runs": ("does not run", "A call raised an error, ran out of memory, hung or crashed."),
    "output_structure": ("wrong output", "Not the reference's structure (tensors, numbers, tuples, lists, dicts)."),
    "output_shape": ("wrong output", "Another shape than the reference's."),
    "output_dtype": ("wrong output", "Another dtype than the reference's."),
    "output_device": ("wrong output", "On another device than the reference's."),
    "outputs_finite": ("wrong output", "NaN or infinity where the reference is finite."),
    "outputs_match_reference": ("wrong output", "Values beyond tolerance of the float64 reference."),
    "timed_outputs_match_reference": (
        "wrong while timed",
        "Right on the calls it could tell were checked, wrong on calls it took for timed ones.",
    ),
    "proof_inputs": ("wrong on a proof", "Wrong on a hack report's proof inputs."),
}

UNKNOWN = ("other", "A check of the harness: the kernel's page gives its finding.")


def family(check: str | None) -> str | None:
    return CHECKS.get(check, UNKNOWN)[0] if check else None


def describe(check: str | None) -> str:
    return CHECKS.get(check, UNKNOWN)[1] if check else ""
