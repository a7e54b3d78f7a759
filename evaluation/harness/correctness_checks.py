"""Correctness checks: a wrong answer is `incorrect`. The outputs' structure, shapes, dtypes and
devices are the reference's, they are finite where it is, and every compared call is within tolerance
of it: on fresh inputs, during timing (calls chosen in secret) and on a hack report's proof inputs.
"""

import math
from typing import Any

from evaluation.harness.check_outcome import Outcome, fail, ok
from evaluation.harness.evidence import DEVICE, PROFILE, PROOF, STEADY, TIMED, TRIAL, WARMUP, Call, Evidence


def _judged_calls(evidence: Evidence, *phases: str) -> list[Call]:
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
        comparison = call.comparison
        assert comparison is not None  # checked
        bad = comparison.get("nonfinite", 0) + comparison.get("nonfinite_mismatch", 0)
        if bad:
            return fail(
                f"{bad} output element(s) are NaN or infinite where the reference is finite (an unwritten "
                "output holds the harness's NaN poison); NaN never passes"
            )
    return ok("no NaN or infinity where the reference is finite") if checked else None


def within_tolerance(call: Call) -> bool:
    """`call` was compared (Call.checked)."""
    comparison = call.comparison
    assert comparison is not None
    error = comparison.get("max_rel_error")
    return (
        not comparison.get("shape_mismatch")
        and not comparison.get("leaf_count_mismatch")
        and not comparison.get("structure_mismatch")
        and error is not None
        and not math.isnan(error)
        and error <= call.tolerance
    )


# The share of an output's elements left at zero or poison from which it is said to be unwritten.
UNWRITTEN_SHARE = 0.5


def _describe_miss(call: Call) -> str:
    comparison = call.comparison
    assert comparison is not None  # only a compared call misses
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
    worst: dict[str, Any] = next((leaf for leaf in comparison.get("leaves", []) if leaf.get("max_rel_error") == error), {})
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


def _show(value: object) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def outputs_match_reference(evidence: Evidence) -> Outcome | None:
    checked = [c for c in evidence.candidate_calls(TRIAL) if c.checked]
    for number, call in enumerate(checked, 1):
        if not within_tolerance(call):
            return fail(f"on fresh inputs (checked call {number}) the {_describe_miss(call)}")
    against = (
        "float32 eager output (see float32_reference_inexact)"
        if any(c.comparison is not None and c.comparison.get("against") == "float32" for c in checked)
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
        comparison = call.comparison
        if comparison is None:  # not checked
            continue
        bad = comparison.get("nonfinite", 0) + comparison.get("nonfinite_mismatch", 0)
        if bad or not within_tolerance(call):
            detail = f"{bad} NaN or infinite elements" if bad else _describe_miss(call)
            return fail(f"on the hack report's proof inputs the candidate is wrong: {detail}")
    return ok("the candidate is right on the hack report's proof inputs") if calls else None
