"""Integrity checks: a broken rule is `rejected`. What the candidate left behind (hooks, threads,
processes, patched functions, global switches), what it returned (plain tensors owning their memory,
settled when captured), its inputs untouched, and its process quiet while it is not called.
"""

from collections.abc import Iterator
from typing import Any

from evaluation.harness.check_outcome import Outcome, fail, ok
from evaluation.harness.evidence import PROFILE, PROOF, STEADY, TIMED, TRIAL, Call, Evidence

# Names of integrity.GlobalState's switches. They live here because the parent judges them and
# never imports torch (which integrity needs).
# Switches that trade accuracy for speed: turning one on is a precision change, not a hack.
PRECISION_SWITCHES = {
    "matmul.allow_tf32": True,
    "cudnn.allow_tf32": True,
    "float32_matmul_precision": "not highest",
    "matmul.allow_fp16_reduced_precision_reduction": True,
    "matmul.allow_bf16_reduced_precision_reduction": True,
    "autocast.cpu": True,
    "autocast.cuda": True,
}


# What the harness can read but not set back: hooks and modes that, once installed, run inside
# every call, the baselines' included.
HOOKS = (
    "sys.trace",
    "sys.profile",
    "threading.trace",
    "threading.profile",
    "torch_function_modes",
    "torch_dispatch_modes",
    "module_hooks",
    "gc.callbacks",
    "signal_handlers",
    "interval_timers",
    "posix_timers",
    "import_hooks",
    "audit_hooks",
)


def lowers_precision(changes: dict[str, Any]) -> list[str]:
    lowered = []
    for name, change in changes.items():
        wanted = PRECISION_SWITCHES.get(name)
        if wanted == "not highest" and change["after"] != "highest" or wanted is True and change["after"] is True:
            lowered.append(name)
    return lowered


def state_changes(evidence: Evidence) -> dict[str, Any]:
    changes = {}
    for reply in evidence.candidate_replies():
        changes.update(reply.get("state_changes", {}))
    return changes


def protocol_intact(evidence: Evidence) -> Outcome | None:
    if evidence.fault and evidence.fault.kind == "protocol":
        return fail(
            f"the candidate's process wrote to the harness's private channel ({evidence.fault.detail}); "
            "kernels must not touch the harness's file descriptors"
        )
    if evidence.protocol:
        return fail(
            f"the candidate's process sent what the harness did not ask for: {'; '.join(evidence.protocol[:3])}; "
            "kernels must not touch the harness's channels"
        )
    return ok("every message on the private channel answered a request") if evidence.calls else None


def harness_intact(evidence: Evidence) -> Outcome | None:
    patched = sorted({name for reply in evidence.candidate_replies() for name in reply.get("patched", [])})
    if patched:
        hint = (
            (
                "; torch.compile makes such changes itself the first time it runs, so a candidate that compiles must "
                "name torch.compile in its source, and the harness starts it before taking its snapshot"
            )
            if "torch.nn.Module.__init__" in patched
            else ""
        )
        return fail(
            f"the candidate replaced {', '.join(patched[:6])}: functions the harness, its clocks or the "
            f"baselines rely on; kernels must not patch torch, Python or the harness{hint}"
        )
    replies = evidence.candidate_replies()
    compared = sum(1 for reply in replies if reply.get("snapshot_compared", True))
    return (
        ok(
            f"timers, comparison functions, torch and the harness are the objects taken before the candidate loaded "
            f"(compared after {compared} of {len(replies)} steps: loading, every instantiation, the finish and a "
            f"secret draw of the calls)"
        )
        if replies
        else None
    )


def no_global_hooks(evidence: Evidence) -> Outcome | None:
    hooks = sorted(name for name in state_changes(evidence) if name in HOOKS)
    if hooks:
        return fail(
            f"the candidate left {', '.join(hooks)} installed: code that runs outside its own calls (while the "
            "harness reads, copies or compares, or later), which the harness cannot switch off; install nothing "
            "that outlives forward"
        )
    return (
        ok(
            "no trace or profile function, torch mode, module hook, gc callback, signal handler, timer, import hook or "
            "audit hook was left installed"
        )
        if evidence.candidate_replies()
        else None
    )


def no_background_threads(evidence: Evidence) -> Outcome | None:
    # What its own process reported (Python threads, by their frames), and what the parent saw from
    # outside: threads, with or without a Python frame, that ran while the process was idle.
    threads = sorted({t for reply in evidence.candidate_replies() for t in reply.get("new_threads", [])})
    threads += evidence.idle.get("busy_threads", [])
    if threads:
        return fail(
            f"the candidate left threads running after it returned ({', '.join(threads[:4])}); work must "
            "finish inside the call, where it is timed"
        )
    return ok("no thread of the candidate outlived its call") if evidence.candidate_replies() else None


def no_background_processes(evidence: Evidence) -> Outcome | None:
    processes = sorted({p for reply in evidence.candidate_replies() for p in reply.get("new_processes", [])})
    if processes:
        return fail(f"the candidate left {len(processes)} child process(es) running; work must finish inside the call")
    return ok("no process of the candidate outlived its call") if evidence.candidate_replies() else None


def _leaves_of(evidence: Evidence, *phases: str) -> Iterator[tuple[Call, int, dict[str, Any]]]:
    for call in evidence.candidate_calls(*phases):
        for index, leaf in enumerate(call.reply.get("output", {}).get("leaves", [])):
            yield call, index, leaf


def output_is_plain_tensor(evidence: Evidence) -> Outcome | None:
    for _call, _, leaf in _leaves_of(evidence):
        if leaf.get("is_tensor_subclass"):
            return fail(
                f"the candidate returned a {leaf['type']}, a torch.Tensor subclass, which can defer or fake its "
                "values; return a plain torch.Tensor holding the computed result"
            )
        if leaf.get("plain_tensor") and not leaf.get("strided"):
            return fail("the candidate returned a sparse or otherwise non-strided tensor; return a dense one")
    return ok("every output is exactly a torch.Tensor") if evidence.candidate_calls() else None


def _reference_facts(evidence: Evidence) -> list[dict[str, Any]]:
    return (evidence.problem or {}).get("output_facts") or []


def output_elements_distinct(evidence: Evidence) -> Outcome | None:
    reference = _reference_facts(evidence)
    for _call, index, leaf in _leaves_of(evidence, TRIAL, TIMED, STEADY, PROFILE, PROOF):
        allowed = index < len(reference) and not reference[index].get("distinct_elements", True)
        if leaf.get("plain_tensor") and not leaf.get("distinct_elements") and not allowed:
            return fail(
                "the candidate returned a tensor whose elements share memory (an expanded or overlapping view), "
                "as a stored constant broadcast to the output shape would; return one element per address"
            )
    return ok("every output element has memory of its own") if evidence.candidate_calls() else None


def output_owns_storage(evidence: Evidence) -> Outcome | None:
    reference = _reference_facts(evidence)
    reference_keeps = (evidence.problem or {}).get("reference_keeps_output")
    for call in evidence.candidate_calls(TRIAL, TIMED, STEADY, PROFILE, PROOF):
        overwritten = call.reply.get("output", {}).get("earlier_output_overwritten")
        if overwritten:
            return fail(
                "the candidate's output was overwritten by its next call (torch.compile's CUDA graphs return "
                f'the same static memory every call: "{overwritten}"); clone the output before returning it'
            )
    for _call, index, leaf in _leaves_of(evidence, TRIAL, TIMED, STEADY, PROFILE, PROOF):
        reference_aliases_input = index < len(reference) and reference[index].get("aliases_input")
        if leaf.get("aliases_input") and not reference_aliases_input:
            return fail(
                "the candidate's output shares memory with an input; the reference returns new memory, so must the candidate"
            )
        if leaf.get("aliases_earlier_output"):
            return fail(
                "the candidate returned memory it had already returned from an earlier call (a stored or "
                "reused output buffer); each call must return a new tensor"
            )
        if leaf.get("aliases_model_state") and not reference_keeps:
            return fail(
                "the candidate returned memory its model holds (a parameter, a buffer or a tensor it keeps: a "
                "stored constant); compute the output"
            )
        if leaf.get("aliases_other_output"):
            return fail("two of the candidate's outputs share memory; the reference's do not")
    return ok("every output owns its storage") if evidence.candidate_calls() else None


def output_settled(evidence: Evidence) -> Outcome | None:
    for call in evidence.candidate_calls():
        changed = call.reply.get("changed_after_capture")
        if changed:
            return fail(
                f"output {changed[0]} changed after the call returned: its bytes, captured as the call completed, "
                "differ from what it held once the harness had read it, so code the candidate left behind (a "
                "hook, a callback, a thread) finished it outside the timed call; the bytes compared are the ones "
                "captured, and the work must be done inside forward"
            )
    return ok("every output held the bytes captured as its call completed") if evidence.candidate_calls() else None


def inputs_unmodified(evidence: Evidence) -> Outcome | None:
    if (evidence.problem or {}).get("reference_mutates_inputs"):
        return ok("the reference itself modifies its inputs, so the candidate may too")
    for call in evidence.candidate_calls():
        if call.inputs_modified:
            return fail(
                f"the candidate modified its input(s) {call.inputs_modified} in place; the reference does not, so "
                "inputs must be left as they were"
            )
    return ok("no input was modified") if evidence.candidate_calls() else None


# The candidate's sandbox may use this share of the baselines' timed wall time (and this much at
# least) while they run, counted by its control group (exited threads included): a reply's tail, never
# a thread working beside them. Frozen, it uses none; where the host has no freezer, this is what holds.
IDLE_SHARE, IDLE_FLOOR_MS = 0.05, 10.0


def quiet_while_baselines_run(evidence: Evidence) -> Outcome | None:
    cpu, wall = evidence.idle["cpu_ms"], evidence.idle["wall_ms"]
    if not wall:
        return None
    if cpu > max(IDLE_FLOOR_MS, IDLE_SHARE * wall):
        return fail(
            f"the candidate's process used {cpu:.0f} ms of CPU while the baselines were timed ({wall:.0f} ms): "
            "something it left running competes with them for the host; nothing may run between its calls"
        )
    how = "frozen" if evidence.idle.get("frozen") else "idle"
    return ok(f"the candidate's process was {how} while the baselines were timed ({cpu:.1f} ms of CPU in {wall:.0f} ms)")


# In the quiet windows (the candidate idle between requests, unfrozen, at replies drawn in secret) its
# sandbox may run this share of the windows' time, and this much at least: an honest process sleeps
# there (RESULTS.md, harness 11).
QUIET_SHARE, QUIET_FLOOR_MS = 0.1, 3.0


def quiet_between_calls(evidence: Evidence) -> Outcome | None:
    idle = evidence.idle
    if not idle.get("quiet_windows"):
        return None
    cpu, wall = idle["quiet_cpu_ms"], idle["quiet_wall_ms"]
    if cpu > max(QUIET_FLOOR_MS, QUIET_SHARE * wall):
        return fail(
            f"the candidate's process ran {cpu:.1f} ms of CPU in {wall:.0f} ms while it had nothing to do "
            f"(between its calls, watched at {idle['quiet_windows']} moment(s) drawn in secret): something it left running "
            "works outside its calls, where nothing is timed; work must finish inside forward"
        )
    return ok(f"the candidate's process was idle between its calls ({cpu:.1f} ms of CPU in {wall:.0f} ms watched)")
