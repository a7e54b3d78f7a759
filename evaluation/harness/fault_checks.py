"""Checks that the problem, the sandbox and the candidate ran at all: parsed, confined, loaded, built,
called. A fault of the candidate's process is `error`, `crashed` or `timeout` (`_fault_outcome`); one of
the problem's or the harness's is `error`.
"""

from evaluation.harness.check_outcome import Outcome, fail, ok
from evaluation.harness.evidence import BASELINE, CANDIDATE, CONTROL, REFERENCE, Evidence
from evaluation.harness.verdict import CRASHED, ERROR, REJECTED, TIMEOUT

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


# -- faults: error, crashed, timeout ---------------------------------------------------------------


def candidate_instantiates(evidence: Evidence) -> Outcome | None:
    faulted = _fault_outcome(evidence, ("instantiate",), "building ModelNew")
    if faulted:
        return faulted
    return ok(f"ModelNew was built {len(evidence.instantiations)} time(s)") if evidence.instantiations else None


# The candidate's stages another check judges (problem_runs, candidate_loads, candidate_instantiates).
# A fault of its process at any other stage is its calls' (a list of those let the device time's
# `graph` call fail unjudged, and a run it stopped verified): a stage added later is judged too.
_JUDGED_BEFORE_CALLS = ("describe", "prepare", "load", "instantiate")


def candidate_runs(evidence: Evidence) -> Outcome | None:
    fault = evidence.fault
    if fault is not None and fault.side == CANDIDATE and fault.stage not in _JUDGED_BEFORE_CALLS:
        return _fault_outcome(evidence, (fault.stage,), "a call of the candidate")
    if evidence.fault and evidence.fault.side == CANDIDATE and evidence.fault.kind == "harness":
        return fail(f"the harness failed around the candidate: {evidence.fault.detail}", ERROR)
    return ok(f"{len(evidence.candidate_calls())} calls ran") if evidence.candidate_calls() else None
