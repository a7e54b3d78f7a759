"""Scoring: the evidence of one run, judged by checks.py, written out as a Verdict.

The verdict is JSON-able data; figures that are not finite (an infinite error) become null, with
the check's detail saying what happened.
"""

import math
import statistics

from evaluation.harness import checks, measurement, tolerance
from evaluation.harness.evidence import CANDIDATE, PROFILE, PROOF, TIMED, TRIAL, WARMUP, Evidence
from evaluation.harness.verdict import BEATS, HARNESS_VERSION, TIMEOUT, VERIFIED, Verdict


def tolerance_for(dtype: str, float32_rel_error: float | None) -> float:
    return tolerance.tolerance(dtype, float32_rel_error)


def clean(value):
    """The same data with NaN and infinities replaced by None, so any JSON parser accepts it."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def _correctness(ev: Evidence, plan) -> dict:
    checked = [c for c in ev.candidate_calls(TRIAL, WARMUP, TIMED, PROFILE, PROOF) if c.checked]
    errors = [c.comparison for c in checked]

    def worst(key):
        values = [e.get(key) for e in errors if e.get(key) is not None]
        return max(values) if values else None

    max_rel = worst("max_rel_error")
    reference_error = checks.reference_float32_error(ev)
    tolerances = [c.tolerance for c in checked if c.tolerance is not None]
    problem = ev.problem or {}
    first_inputs = next((c.reply.get("inputs") for c in ev.candidate_calls(TRIAL) if c.reply.get("inputs")), None)
    return {
        "trials": len([i for i in ev.instantiations if i.get("ok")]) if ev.instantiations else 0,
        "inputs_per_trial": plan.inputs_per_trial,
        "checked_calls": len(checked),
        "checked_timed_calls": len([c for c in checked if c.phase in (WARMUP, TIMED, PROFILE)]),
        "max_abs_error": worst("max_abs_error"),
        "max_rel_error": max_rel,
        "rel_l2_error": worst("rel_l2_error"),
        "atol": 0.0,
        "rtol": max(tolerances) if tolerances else None,
        "error_measure": "max over elements of |c - r| / (|r| + output scale), output scale = RMS of the float64 reference",
        "precision_tier": tolerance.tier(max_rel) if checked else None,
        "reference_precision": problem.get("reference_precision"),
        "float32_reference_error": reference_error,
        "output_scale": problem.get("output_scale"),
        "inputs": first_inputs,
        "shape_check": ev.variant,
    }




def _latency(ev: Evidence, plan) -> dict | None:
    candidate = ev.timed_samples(CANDIDATE)
    if not candidate:
        return None
    baselines = {}
    for name in ev.baselines:
        samples = ev.timed_samples(name)
        if samples:
            baselines[name] = measurement.summarize(samples)
        elif name in ev.cached_baselines and ev.cached_baselines[name].get("latency"):
            baselines[name] = {**ev.cached_baselines[name]["latency"], "cached": True}
    measured = measurement.summarize(candidate)
    # Each latency round times one call of every side: the i-th samples of two sides share a round.
    paired = {i: [x] for i, x in enumerate(candidate)}
    intervals = {name: measurement.speedup_interval({i: [x] for i, x in enumerate(ev.timed_samples(name))}, paired,
                                                   resamples=plan.bootstrap_resamples)
                 for name in baselines if not baselines[name].get("cached")}
    return {
        "what": "one call at a time on an idle device, the device synchronized after each (what a single call waits)",
        "speedup_intervals": {name: list(i) if i else None for name, i in intervals.items()},
        "beats": {name: bool(i and i[0] > BEATS) for name, i in intervals.items()},
        "method": (ev.prepared or {}).get("timer_method"),
        "candidate": measured,
        "baselines": baselines,
        "speedups": {name: m["median_ms"] / measured["median_ms"] for name, m in baselines.items() if measured["median_ms"] > 0},
        "candidate_ci_fraction": measurement.median_ci_fraction(candidate),
        "harness_wake_up_ms": ev.wake_up_ms(),
        # The host's own time inside each timed call, median per side (CUDA; see the flag host_bound).
        "host_ms": {who: ms for who in (CANDIDATE, *baselines) if (ms := ev.host_ms(who)) is not None},
    }


def _steady_state(ev: Evidence, plan) -> dict | None:
    candidate_rounds = ev.steady_rounds(CANDIDATE)
    candidate = ev.steady_samples(CANDIDATE)
    if not candidate:
        return None
    measured = measurement.summarize(candidate)
    baselines, speedups, intervals = {}, {}, {}
    for name in ev.baselines:
        rounds = ev.steady_rounds(name)
        samples = [x for r in rounds.values() for x in r]
        if samples:
            baselines[name] = {**measurement.summarize(samples), "rounds": len(rounds)}
            speedups[name] = measurement.speedup(samples, candidate)
            intervals[name] = measurement.speedup_interval(rounds, candidate_rounds, resamples=plan.bootstrap_resamples)
        elif name in ev.cached_baselines and ev.cached_baselines[name].get("steady_state"):
            cached = ev.cached_baselines[name]["steady_state"]
            baselines[name] = {**cached, "cached": True}
            speedups[name] = cached["median_ms"] / measured["median_ms"] if measured["median_ms"] > 0 else None
            # The cached side's own spread is not known here: the interval is the candidate's alone.
            low, high = measurement.median_interval(candidate)
            intervals[name] = (cached["median_ms"] / high, cached["median_ms"] / low) if low > 0 else None
    device = "CUDA events around each call on the calling stream" if ev.device == "cuda" else "a monotonic clock around each call"
    steady = ev.steady or {}
    return {
        "what": "calls back to back, each on fresh inputs, as a model calling the kernel in a loop sees it",
        "method": (f"bursts of up to {steady.get('most_calls_per_burst')} calls, one burst of each side per round in "
                   f"shuffled order, each side in its own process; {device}; inputs uploaded and the cache flushed "
                   "between calls outside the interval; one device-wide synchronize per burst, after which no work may "
                   "be left (flag hidden_work); median; 95% intervals by a paired bootstrap over rounds"),
        "candidate": {**measured, "rounds": len(candidate_rounds)},
        "baselines": baselines,
        "speedups": speedups,
        "speedup_intervals": {name: list(i) if i else None for name, i in intervals.items()},
        "beats": {name: bool(i and i[0] > BEATS) for name, i in intervals.items()},
        "rounds": steady.get("rounds"),
        "stopped_by": steady.get("stopped_by"),
        # What the device still had to do after each side's bursts (flag hidden_work), median and most, in µs.
        "leftover_us": {who: {"median": statistics.median(values) * 1e3, "max": max(values) * 1e3, "bursts": len(values)}
                        for who in (CANDIDATE, *ev.baselines)
                        if (values := [b["leftover_ms"] for b in ev.bursts if b["who"] == who and b["round"] > 0])},
        "converged": steady.get("stopped_by") == "interval",
        "target_fraction": plan.speedup_target,
    }


def _timing(ev: Evidence, plan) -> dict | None:
    if not ev.baselines:
        return None
    latency = _latency(ev, plan)
    steady = _steady_state(ev, plan)
    # The headline stays the latency until the steady state repeats within a few percent between
    # processes: on an H100 its eager side moved 40-75% for host-bound references (benchmarks/RESULTS.md).
    headline = latency or steady
    if headline is None:
        return None
    unavailable = {name: reason for name, reason in (ev.prepared or {}).get("baselines", {}).items() if reason != "ready"}
    return {
        # Which measure the leaderboard's figures are.
        "headline": "latency" if latency else "steady_state",
        "method": headline["method"],
        "candidate": headline["candidate"],
        "baselines": headline["baselines"],
        "speedups": headline["speedups"],
        "speedup_intervals": headline.get("speedup_intervals", {}),
        "beats": headline.get("beats", {}),
        "converged": headline.get("converged"),
        "stopped_by": headline.get("stopped_by"),
        "measures": {"steady_state": steady, "latency": latency},
        "unavailable": unavailable,
        "candidate_ci_fraction": measurement.median_ci_fraction(ev.steady_samples(CANDIDATE) or ev.timed_samples(CANDIDATE)),
        "harness_wake_up_ms": ev.wake_up_ms(),
        "host_ms": (latency or {}).get("host_ms", {}),
        "speed_of_light": checks.sol_floor(ev),
        "gpu": ev.gpu or None,
        "wall_clock": {
            "candidate_median_ms": measurement.summarize([c.wall_ms for c in ev.candidate_calls(TIMED)])["median_ms"],
            "note": "the parent's own clock around each whole latency call (input generation, flush, checks included)",
        },
    }


def _kernels(ev: Evidence) -> dict:
    kernels = {}
    for call in ev.calls:
        if call.phase == PROFILE and call.reply.get("kernels") is not None:
            kernels["candidate" if call.who == CANDIDATE else "reference"] = call.reply["kernels"]
    return kernels


def _reason(first: dict | None, timing: dict | None, entries: list) -> str:
    if first:
        return f"{first['name']}: {first['detail']}."
    speed = ""
    if timing and timing.get("speedups"):
        speed = "; " + ", ".join(f"{s:.2f}x over {name}" for name, s in timing["speedups"].items())
    return f"All {len(entries)} checks passed{speed}."


def verdict(ev: Evidence, *, plan, limits) -> Verdict:
    entries, first = checks.run_checks(ev)
    flags = checks.run_flags(ev)
    timing = _timing(ev, plan)
    status = first["status"] if first else VERIFIED
    if status == VERIFIED and not ev.candidate_calls(TRIAL):
        status, first = "error", {"name": "candidate_runs", "detail": "the candidate was never run", "status": "error"}
    correctness = _correctness(ev, plan)
    samples, needed = len(ev.timed_samples(CANDIDATE)), min(plan.min_samples, plan.max_samples)
    if status == VERIFIED and ev.baselines and samples < needed:
        # Right on every checked call, but with no speed worth stating: the timing loop stops a minute
        # before the wall limit, and a slow build or a wait for the device can leave it no time.
        first = {"name": "timing_complete", "status": TIMEOUT,
                 "detail": f"the wall limit ({limits.wall_time_s:.0f} s) came before the timing did: {samples} timed "
                           f"samples of the {needed} the plan needs, too few to state a speed (the "
                           f"{correctness['checked_calls']} checked calls were right)"}
        status = TIMEOUT
        entries = [*entries, {"name": first["name"], "passed": False, "detail": first["detail"]}]
    result = {
        "harness_version": HARNESS_VERSION,
        "status": status,
        "reason": _reason(first, timing, entries),
        "checks": entries,
        "correctness": correctness,
        "flags": sorted(flags),
        "flag_details": flags,
        "kernels": _kernels(ev),
        "static": ev.static,
        "problem": {k: v for k, v in (ev.problem or {}).items() if k not in ("ok", "spec")},
        "env": ev.env or {},
        "sandbox": ev.sandbox,
        "log_excerpt": ev.log_excerpt,
        "cost": ev.cost,
    }
    if timing:
        result["timing"] = timing
    return clean(result)


def failed_verdict(ev: Evidence, reason: str) -> Verdict:
    """The verdict when the evidence cannot be judged: an error of the harness's, saying so."""
    return clean({
        "harness_version": HARNESS_VERSION, "status": "error", "reason": reason,
        "checks": [{"name": "harness_judged", "passed": False, "detail": reason}], "correctness": {}, "flags": [],
        "flag_details": {}, "kernels": {}, "static": ev.static, "problem": {}, "env": ev.env or {}, "sandbox": ev.sandbox,
        "log_excerpt": ev.log_excerpt, "cost": ev.cost,
    })
