"""The checks, in the order they decide a verdict. Read this list to audit the harness.

Each check is a small function of the evidence returning an Outcome, or None where it did not
run (its evidence does not exist). The first check that fails decides the status and its detail
becomes the verdict's reason; integrity checks come before fault and correctness checks, so a
candidate that cheats and then crashes is `rejected`, not `crashed`.

Flags (flags.py) come after: notable findings that do not change the status.
"""

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from evaluation.harness import measurement
from evaluation.harness.evidence import (
    BASELINE,
    CANDIDATE,
    CONTROL,
    DEVICE,
    PROFILE,
    PROOF,
    REFERENCE,
    STEADY,
    TIMED,
    TRIAL,
    WARMUP,
    Evidence,
)
from evaluation.harness.verdict import CRASHED, ERROR, INCORRECT, REJECTED, TIMEOUT

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


def lowers_precision(changes: dict) -> list[str]:
    lowered = []
    for name, change in changes.items():
        wanted = PRECISION_SWITCHES.get(name)
        if wanted == "not highest" and change["after"] != "highest" or wanted is True and change["after"] is True:
            lowered.append(name)
    return lowered


def state_changes(evidence: Evidence) -> dict:
    changes = {}
    for reply in evidence.candidate_replies():
        changes.update(reply.get("state_changes", {}))
    return changes


@dataclass(frozen=True)
class Outcome:
    passed: bool
    detail: str
    status: str | None = None  # overrides the check's own status on failure


def ok(detail: str) -> Outcome:
    return Outcome(True, detail)


def fail(detail: str, status: str | None = None) -> Outcome:
    return Outcome(False, detail, status)


_FAULT_STATUS = {
    "timeout": TIMEOUT,
    "crashed": CRASHED,
    "memory": ERROR,
    "exception": ERROR,
    "harness": ERROR,
    "protocol": REJECTED,
    "disk": ERROR,
}


def _fault_outcome(evidence: Evidence, stages: tuple[str, ...], what: str) -> Outcome | None:
    fault = evidence.fault
    if fault is None or fault.side != CANDIDATE or fault.stage not in stages:
        return None
    status = CRASHED if fault.cuda else _FAULT_STATUS[fault.kind]
    if fault.kind == "memory":
        return fail(f"{what} ran out of memory: {fault.detail}; use less memory", status)
    if fault.kind == "timeout":
        return fail(f"{what} took too long: {fault.detail}", status)
    if fault.kind == "disk":
        return fail(f"{what} wrote too much: {fault.detail}; build less, or keep less of it", status)
    return fail(f"{what} failed: {fault.detail}", status)


# -- loading --------------------------------------------------------------------------------------


def candidate_parses(evidence: Evidence) -> Outcome | None:
    error = evidence.static.get("parse_error")
    return fail(f"the candidate does not parse ({error}); fix the syntax") if error else ok("the source parses")


def sandbox_in_force(evidence: Evidence) -> Outcome | None:
    if evidence.unconfined:
        return fail(f"the worker {evidence.unconfined}; an operator must install bubblewrap (the bubblewrap package) on it")
    return None


def problem_fits(evidence: Evidence) -> Outcome | None:
    if evidence.refused:
        return fail(f"the problem was refused before any process started: {evidence.refused}")
    return None


def problem_runs(evidence: Evidence) -> Outcome | None:
    if evidence.fault and evidence.fault.side == REFERENCE:
        return fail(
            f"the problem's reference failed at {evidence.fault.stage}: {evidence.fault.detail}; the problem must run on its own"
        )
    if evidence.fault and evidence.fault.side in (BASELINE, CONTROL) and evidence.fault.kind != "protocol":
        return fail(
            f"the problem's baselines failed at {evidence.fault.stage}: {evidence.fault.detail}; the problem must run on its own"
        )
    if evidence.fault and evidence.fault.side == "proof":
        return fail(
            f"the hack report's proof inputs failed at {evidence.fault.stage}: {evidence.fault.detail}; a proof must define "
            "get_inputs() returning inputs of the problem's kind"
        )
    if evidence.fault and evidence.fault.side == CANDIDATE and evidence.fault.stage in ("describe", "prepare"):
        return fail(f"the candidate's process could not be prepared: {evidence.fault.detail}")
    if evidence.problem is None:
        return None
    if evidence.problem.get("reference_nan"):
        return fail("the problem's reference output holds NaN, so no candidate can be judged against it")
    return ok(f"the reference runs ({evidence.problem.get('reference_precision')})")


def candidate_loads(evidence: Evidence) -> Outcome | None:
    faulted = _fault_outcome(evidence, ("load",), "importing the candidate")
    if faulted:
        return faulted
    return ok("the candidate's module loads") if evidence.loaded and evidence.loaded.get("ok") else None


def defines_model_new(evidence: Evidence) -> Outcome | None:
    told = "define `class ModelNew(nn.Module)` taking the problem's init inputs"
    if not evidence.static.get("parse_error") and not evidence.static.get("names_model_new", True):
        return fail(f"the candidate defines no class ModelNew (the name does not occur in its source); {told}")
    if not evidence.loaded or not evidence.loaded.get("ok"):
        return None
    if not evidence.loaded.get("defines_model_new"):
        return fail(f"the candidate defines no class ModelNew; {told}")
    return ok("ModelNew is defined")


# -- integrity: a broken rule is `rejected` --------------------------------------------------------


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


def _leaves_of(evidence: Evidence, *phases: str):
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


def _reference_facts(evidence: Evidence) -> list[dict]:
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


# From below (CPU): a burst's calls on the CPU are all of its time but a per-call overhead of the same
# code and bytes in a process of the same shape, the A/A control's. The candidate's least overhead per
# call over its bursts (a loaded host only ever adds to it: the suite's three workers on two cores put
# 3 ms into the median) may exceed the control's least by this much, or this share of its calls' own
# time: more is time under-reported. Where the control's own bursts spread wider than that (a loaded
# host: 10 ms per call beside four other suites), the parent's clock cannot tell an under-report from
# the host's noise: nothing is rejected, and no speedup is stated as a win (flag `clock_unbounded`).
UNDER_REPORTED_MS, UNDER_REPORTED_SHARE = 2.0, 0.5


def _overheads_per_call(evidence: Evidence, who: str) -> list[float]:
    bursts = [b for b in evidence.bursts if b["who"] == who and b.get("phase", STEADY) == STEADY and b["round"] > 0]
    return [(b["wall_ms"] - b["sum_ms"]) / b["calls"] for b in bursts if b.get("sum_ms") is not None and b["calls"]]


def clock_bound(evidence: Evidence) -> dict | None:
    """On the CPU, with the control's bursts: the candidate's least overhead per call beyond the control's
    (`excess`), what may be missed (`allowed`), and the host's noise (`noise`, the control's range)."""
    own, control = _overheads_per_call(evidence, CANDIDATE), _overheads_per_call(evidence, CONTROL)
    samples = evidence.steady_samples(CANDIDATE)
    if evidence.device != "cpu" or len(own) < 3 or len(control) < 3 or not samples:
        return None
    typical = statistics.median(samples)
    return {
        "typical": typical,
        "excess": min(own) - min(control),
        "allowed": max(UNDER_REPORTED_MS, UNDER_REPORTED_SHARE * typical),
        "noise": max(control) - min(control),
    }


def clock_consistent(evidence: Evidence) -> Outcome | None:
    calls = [(c.ms, c.wall_ms) for c in evidence.calls if c.ms is not None and c.phase in (TIMED, WARMUP)]
    calls += [(b["sum_ms"], b["wall_ms"]) for b in evidence.bursts if b.get("sum_ms") is not None]
    if not calls:
        return None
    impossible = measurement.calls_exceeding_wall(calls)
    if impossible:
        ms, wall = impossible[0]
        return fail(
            f"a call reported {ms:.3f} ms but the harness's own clock saw only {wall:.3f} ms: the timer was tampered with"
        )
    bound = clock_bound(evidence)
    if bound is not None:
        if bound["noise"] > bound["allowed"]:
            return ok(
                "every time the call site wrote fits within the harness's own clock; from below the host was too noisy "
                f"to tell ({bound['noise']:.1f} ms per call across the control's bursts: flag clock_unbounded)"
            )
        if bound["excess"] > bound["allowed"]:
            return fail(
                f"the candidate's calls reported {bound['typical']:.3f} ms each, but the harness's own clock waited "
                f"{bound['excess']:.3f} ms more per call of its bursts than for the same reference in a process of the "
                "candidate's shape: its times were under-reported"
            )
        return ok("every time the call site wrote fits the harness's own clock, from above and from below")
    return ok("every time the call site wrote fits within the harness's own clock")


# Work a burst's last call left on the device beyond what the eager reference's bursts leave (the
# host's own wait in the closing synchronize), judged at the median over the bursts: flagged beyond
# HIDDEN_WORK_FLAG (ms, share of a call), rejected beyond HIDDEN_WORK_REJECT. The wait is read on the
# host, so a single burst can be late by a wake-up: the median is judged from HIDDEN_WORK_BURSTS bursts
# on, one burst only where it is far beyond. On an H100, CUDA-L1's L3 T4 (forward replays a CUDA graph)
# left 12-20 us more than its eager reference after every burst (benchmarks/RESULTS.md): a flag, not a
# rejection; a GPU poller that waits for the next call's inputs must outlive the host's issuing of that
# call, and is left running after every burst.
HIDDEN_WORK_FLAG, HIDDEN_WORK_REJECT, HIDDEN_WORK_BURSTS = (0.02, 0.1), (0.05, 0.25), 5


def _hidden_work(evidence: Evidence, floor_ms: float, share: float) -> str | None:
    if evidence.device != "cuda":
        return None
    own = [b["leftover_ms"] for b in evidence.bursts if b["who"] == CANDIDATE and b["round"] > 0]
    eager = [b["leftover_ms"] for b in evidence.bursts if b["who"] == "eager"]
    # Both measures' bursts: a captured graph's replay may leave work behind as well as a call.
    samples = evidence.steady_samples(CANDIDATE)
    if not own or not eager or not samples:
        return None
    base, typical = statistics.median(eager), statistics.median(samples)
    allowed = max(floor_ms, share * typical)
    excess = statistics.median(own) - base
    large = [x for x in own if x - base > max(50 * floor_ms, 10 * typical)]
    if (len(own) >= HIDDEN_WORK_BURSTS and excess > allowed) or len(large) >= max(2, len(own) // 2):
        worst = max(own) - base
        return (
            f"the device was still busy after a burst's last call had returned: {excess * 1e3:.0f} us beyond the "
            f"eager reference's bursts at the median, {worst * 1e3:.0f} us at most, while a call is measured at "
            f"{typical * 1e3:.0f} us; work left on another stream or thread runs outside the timed interval. Do "
            "all of forward's work on the calling stream, or have that stream wait for it before returning"
        )
    return None


# Each burst call's gap from its end to the device drained, less the same gap after a write of the
# harness's own at once (callsite.c, `settled` and `floor`): what the call left on another stream or
# thread, the host's wake-up in that process taken out. The candidate's median beyond the eager
# reference's by more than the first pair is rejected (the steady state, the headline), by more than
# the second flagged (the device time's replays too). Not counted in the call's time: on an H100 the
# floor's drain woke sooner than a long call's did (~10 us after a 60 us call), so counting it added
# that much to honest calls (RESULTS.md, harness 10). Alone on an H100, 27 honest kernels' gaps lay up
# to 7.9 us beyond eager's, the steady state's up to 7.6 us (RESULTS.md, harness 11): the floor of the
# first pair stands above that.
SETTLE_REJECT = (0.010, 0.15)
SETTLE_FLAG = (0.001, 0.05)


# The least burst calls a side needs for its median drain to be judged. Calls of 10 ms or more, or
# with inputs near the plan's burst_bytes, make bursts of one call, one a round: with ten needed, such
# a candidate's drain was never judged nor charged (an attacker's reading of harness 14). Every measure
# runs steady_min_rounds (6) at least; a single wake-up cannot move a median of five, and the bars
# scale with the call.
DRAIN_LEAST_CALLS = 5


def _drain_excess(evidence: Evidence, who: str, phase: str) -> tuple[float, float] | None:
    """`who`'s burst calls' median drain gap beyond the eager reference's, and its median call (ms)."""
    own, eager = evidence.settle_ms(who, phase), evidence.settle_ms("eager", phase)
    samples = [c.ms for c in evidence.calls if c.who == who and c.phase == phase and c.ms is not None]
    if len(own) < DRAIN_LEAST_CALLS or len(eager) < DRAIN_LEAST_CALLS or not samples:
        return None
    return statistics.median(own) - statistics.median(eager), statistics.median(samples)


def leftover_counted_ms(evidence: Evidence, who: str, phase: str) -> float:
    """What each of `who`'s burst calls is charged for work it left on the device: its median drain gap
    beyond the eager reference's, where the flag hidden_work sees it (SETTLE_FLAG); nothing below that,
    where the hosts' wake-ups differ by as much (honest kernels alone on an H100: 0.4 us at the median).
    Work left below the rejection then gains nothing: a product of a few microseconds left on a side
    stream read 3.4x over eager on an H200 while it was only flagged (RESULTS.md, harness 13)."""
    if evidence.device != "cuda":
        return 0.0
    found = _drain_excess(evidence, who, phase)
    if found is None:
        return 0.0
    excess, typical = found
    floor_ms, share = SETTLE_FLAG
    return excess if excess > max(floor_ms, share * typical) else 0.0


def charged_rounds(evidence: Evidence, who: str, phase: str = STEADY, charged: float | None = None) -> dict[int, list[float]]:
    """`who`'s samples of a burst measure by round, each charged with the work it left (`charged`, where
    the caller has it: leftover_counted_ms)."""
    if charged is None:
        charged = leftover_counted_ms(evidence, who, phase)
    return {r: [x + charged for x in xs] for r, xs in evidence.steady_rounds(who, phase).items()}


def _settle_excess(evidence: Evidence, floor_ms: float, share: float, phases=(STEADY, DEVICE)) -> str | None:
    for phase in phases:
        found = _drain_excess(evidence, CANDIDATE, phase)
        if found is None:
            continue
        excess, typical = found
        if excess > max(floor_ms, share * typical):
            return (
                f"the device was still busy after the candidate's calls had ended on the calling stream: "
                f"{excess * 1e3:.1f} us more than after the eager reference's at the median, while a call is measured "
                f"at {typical * 1e3:.1f} us; work left on another stream or thread runs outside the timed interval. "
                "Do all of forward's work on the calling stream, or have that stream wait for it before returning"
            )
    return None


def no_hidden_work(evidence: Evidence) -> Outcome | None:
    """A burst's calls are timed on the calling stream, back to back, and the device synchronized once
    at the end: work a call leaves on another stream or thread runs outside its interval, and the last
    call's is still running when the calling stream is done. The parent picks the last call after it
    has returned, so a candidate that leaves work behind on some calls is seen on as many bursts as end
    on one of them. The steady state is the headline: such work would be a speedup nobody gets."""
    if evidence.device != "cuda" or not evidence.bursts:
        return None
    found = _settle_excess(evidence, *SETTLE_REJECT, phases=(STEADY,)) or _hidden_work(evidence, *HIDDEN_WORK_REJECT)
    return fail(found) if found else ok("no work was left on the device after the bursts' last calls")


def hidden_work(evidence: Evidence) -> str | None:
    """Less left behind than no_hidden_work rejects, but more than the eager reference leaves."""
    if evidence.device != "cuda" or not evidence.bursts:
        return None
    return _settle_excess(evidence, *SETTLE_FLAG) or _hidden_work(evidence, *HIDDEN_WORK_FLAG)


# -- faults: error, crashed, timeout ---------------------------------------------------------------


def candidate_instantiates(evidence: Evidence) -> Outcome | None:
    faulted = _fault_outcome(evidence, ("instantiate",), "building ModelNew")
    if faulted:
        return faulted
    return ok(f"ModelNew was built {len(evidence.instantiations)} time(s)") if evidence.instantiations else None


def candidate_runs(evidence: Evidence) -> Outcome | None:
    faulted = _fault_outcome(evidence, ("call", "burst", "dump", "finish"), "a call of the candidate")
    if faulted:
        return faulted
    if evidence.fault and evidence.fault.side == CANDIDATE and evidence.fault.kind == "harness":
        return fail(f"the harness failed around the candidate: {evidence.fault.detail}", ERROR)
    return ok(f"{len(evidence.candidate_calls())} calls ran") if evidence.candidate_calls() else None


# -- correctness: a wrong answer is `incorrect` ----------------------------------------------------


def _judged_calls(evidence: Evidence, *phases: str):
    return [c for c in evidence.candidate_calls(*phases) if c.reply.get("output")]


def output_structure(evidence: Evidence) -> Outcome | None:
    expected = (evidence.problem or {}).get("structure")
    calls = _judged_calls(evidence, TRIAL, TIMED, STEADY, PROFILE)
    for call in calls:
        got = call.reply["output"]["structure"]
        if expected and got != expected and not any(leaf.get("is_tensor_subclass") for leaf in call.reply["output"]["leaves"]):
            return fail(f"the candidate returned {got} where the reference returns {expected}")
    return ok(f"outputs are structured as the reference's ({expected})") if calls else None


def _spec_mismatch(evidence: Evidence, key: str, label: str) -> Outcome | None:
    calls = _judged_calls(evidence, TRIAL, TIMED, STEADY, PROFILE)
    for call in calls:
        spec = (call.reference or {}).get("spec") or evidence.expected_spec()
        for index, leaf in enumerate(call.reply["output"]["leaves"]):
            if index < len(spec) and key in leaf and key in spec[index] and leaf[key] != spec[index][key]:
                return fail(f"output {index} has {label} {leaf[key]}, the reference's has {spec[index][key]}")
    return ok(f"every output has the reference's {label}") if calls else None


def output_shape(evidence: Evidence) -> Outcome | None:
    return _spec_mismatch(evidence, "shape", "shape")


def output_dtype(evidence: Evidence) -> Outcome | None:
    return _spec_mismatch(evidence, "dtype", "dtype")


def output_device(evidence: Evidence) -> Outcome | None:
    return _spec_mismatch(evidence, "device", "device")


def outputs_finite(evidence: Evidence) -> Outcome | None:
    checked = [c for c in evidence.candidate_calls(TRIAL, TIMED, STEADY, DEVICE, PROFILE) if c.checked and not c.replay]
    for call in checked:
        bad = call.comparison.get("nonfinite", 0) + call.comparison.get("nonfinite_mismatch", 0)
        if bad:
            return fail(
                f"{bad} output element(s) are NaN or infinite where the reference is finite (an unwritten "
                "output holds the harness's NaN poison); NaN never passes"
            )
    return ok("no NaN or infinity where the reference is finite") if checked else None


def within_tolerance(call) -> bool:
    error = call.comparison.get("max_rel_error")
    return (
        not call.comparison.get("shape_mismatch")
        and not call.comparison.get("leaf_count_mismatch")
        and not call.comparison.get("structure_mismatch")
        and error is not None
        and not math.isnan(error)
        and error <= call.tolerance
    )


# The share of an output's elements left at zero or poison from which it is said to be unwritten.
UNWRITTEN_SHARE = 0.5


def _describe_miss(call) -> str:
    comparison = call.comparison
    if comparison.get("structure_mismatch"):
        got, expected = comparison["structure_mismatch"]
        missing = "; ".join(comparison.get("uncaptured") or [])
        return f"output, captured as the call completed, is structured {got} where the reference's is {expected}" + (
            f" (not captured: {missing})" if missing else ""
        )
    uncaptured = [leaf["uncaptured"] for leaf in comparison.get("leaves", []) if leaf.get("uncaptured")]
    if uncaptured:
        return f"output holds {uncaptured[0]}, which the harness cannot compare"
    if comparison.get("max_rel_error") is None:
        return "output could not be compared"
    unwritten = comparison.get("unwritten_fraction") or 0.0
    if unwritten >= UNWRITTEN_SHARE:
        return (
            f"output was never written: {unwritten:.0%} of its elements hold zero or the harness's NaN poison "
            "where the reference has values, as captured when the call returned (work finished later, by code "
            "left behind, is not the call's)"
        )
    error = comparison.get("max_rel_error")
    worst = next((leaf for leaf in comparison.get("leaves", []) if leaf.get("max_rel_error") == error), {})
    where = (
        f" at index {worst.get('worst_index', [])} (got {_show(worst['worst_values'][0])}, expected "
        f"{_show(worst['worst_values'][1])})"
        if worst.get("worst_values")
        else ""
    )
    return (
        f"relative error {error:.3g} (|c - r| / (|r| + output scale)) exceeds the tolerance {call.tolerance:.3g}{where}; "
        f"max absolute error {comparison.get('max_abs_error') or 0:.3g} "
        f"on outputs of scale {comparison.get('output_scale') or 0:.3g}"
    )


def _show(value) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def outputs_match_reference(evidence: Evidence) -> Outcome | None:
    checked = [c for c in evidence.candidate_calls(TRIAL) if c.checked]
    for number, call in enumerate(checked, 1):
        if not within_tolerance(call):
            return fail(f"on fresh inputs (checked call {number}) the {_describe_miss(call)}")
    against = (
        "float32 eager output (see float32_reference_inexact)"
        if any(c.comparison.get("against") == "float32" for c in checked)
        else "float64 reference"
    )
    return ok(f"{len(checked)} fresh input sets match the {against}") if checked else None


def timed_outputs_match_reference(evidence: Evidence) -> Outcome | None:
    checked = [c for c in evidence.candidate_calls(WARMUP, TIMED, STEADY, DEVICE, PROFILE) if c.checked and not c.replay]
    for call in checked:
        if not within_tolerance(call):
            return fail(f"a call during timing returned a wrong result, unlike the earlier checks: the {_describe_miss(call)}")
    return ok(f"{len(checked)} timed calls, chosen in secret, match the reference too") if checked else None


def proof_inputs(evidence: Evidence) -> Outcome | None:
    calls = evidence.candidate_calls(PROOF)
    for call in calls:
        if not call.checked:
            continue
        bad = call.comparison.get("nonfinite", 0) + call.comparison.get("nonfinite_mismatch", 0)
        if bad or not within_tolerance(call):
            detail = f"{bad} NaN or infinite elements" if bad else _describe_miss(call)
            return fail(f"on the hack report's proof inputs the candidate is wrong: {detail}")
    return ok("the candidate is right on the hack report's proof inputs") if calls else None


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


def run_checks(evidence: Evidence) -> tuple[list[dict], dict | None]:
    """Every check that ran, as verdict entries, and the first failure (with its status)."""
    entries, first = [], None
    for check in CHECKS:
        outcome = check.run(evidence)
        if outcome is None:
            continue
        entries.append({"name": check.name, "passed": outcome.passed, "detail": outcome.detail})
        if not outcome.passed and first is None:
            first = {"name": check.name, "status": outcome.status or check.status, "detail": outcome.detail}
    return entries, first


def blocking_failure(evidence: Evidence) -> dict | None:
    """The first failure so far, which ends the run early: nothing later can undo it."""
    return run_checks(evidence)[1]
