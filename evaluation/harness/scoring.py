"""Scoring: the evidence of one run, judged by checks.py, written out as a Verdict.

The verdict is JSON-able data; figures that are not finite (an infinite error) become null, with
the check's detail saying what happened.
"""

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from evaluation.harness import checks, flags, measurement, tolerance
from evaluation.harness.evidence import CANDIDATE, CONTROL, DEVICE, PROFILE, PROOF, STEADY, TIMED, TRIAL, WARMUP, Evidence
from evaluation.harness.limits import INTERVAL_ROUNDS, Limits, Plan
from evaluation.harness.verdict import BEATS, HARNESS_VERSION, TIMEOUT, VERIFIED, Check, Verdict


def tolerance_for(dtype: str, float32_rel_error: float | None) -> float:
    return tolerance.tolerance(dtype, float32_rel_error)


def clean(value: Any) -> Any:
    """The same data with NaN and infinities replaced by None, so any JSON parser accepts it."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def _correctness(evidence: Evidence, plan: Plan) -> dict[str, Any]:
    checked = [c for c in evidence.candidate_calls(TRIAL, WARMUP, TIMED, PROFILE, PROOF) if c.checked]
    errors = [c.comparison for c in checked if c.comparison is not None]

    def worst(key: str) -> Any:
        values: list[Any] = [e.get(key) for e in errors if e.get(key) is not None]
        return max(values) if values else None

    max_rel = worst("max_rel_error")
    reference_error = flags.reference_float32_error(evidence)
    tolerances = [c.tolerance for c in checked if c.tolerance is not None]
    problem = evidence.problem or {}
    first_inputs = next((c.reply.get("inputs") for c in evidence.candidate_calls(TRIAL) if c.reply.get("inputs")), None)
    return {
        "trials": len([i for i in evidence.instantiations if i.get("ok")]) if evidence.instantiations else 0,
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
        "shape_check": evidence.variant,
    }


def _latency(evidence: Evidence, plan: Plan) -> dict[str, Any] | None:
    candidate = evidence.timed_samples(CANDIDATE)
    if not candidate:
        return None
    baselines: dict[str, Mapping[str, Any]] = {}
    for name in evidence.baselines:
        samples = evidence.timed_samples(name)
        if samples:
            baselines[name] = measurement.summarize(samples)
        elif name in evidence.cached_baselines and evidence.cached_baselines[name].get("latency"):
            baselines[name] = {**evidence.cached_baselines[name]["latency"], "cached": True}
    measured = measurement.summarize(candidate)
    # Each latency round times one call of every side: the i-th samples of two sides share a round.
    paired = {i: [x] for i, x in enumerate(candidate)}
    intervals = {
        name: measurement.speedup_interval(
            {i: [x] for i, x in enumerate(evidence.timed_samples(name))}, paired, resamples=plan.bootstrap_resamples
        )
        for name in baselines
        if not baselines[name].get("cached")
    }
    return {
        "what": "one call at a time on an idle device, the device synchronized after each (what a single call waits)",
        "speedup_intervals": {name: list(i) if i else None for name, i in intervals.items()},
        "beats": {name: bool(i and i[0] > BEATS) for name, i in intervals.items()},
        "method": (evidence.prepared or {}).get("timer_method"),
        "candidate": measured,
        "baselines": baselines,
        "speedups": {name: m["median_ms"] / measured["median_ms"] for name, m in baselines.items() if measured["median_ms"] > 0},
        "candidate_ci_fraction": measurement.median_ci_fraction(candidate),
        "harness_wake_up_ms": evidence.wake_up_ms(),
        # The host's own time inside each timed call, median per side (CUDA; see the flag host_bound).
        "host_ms": {who: ms for who in (CANDIDATE, *baselines) if (ms := evidence.host_ms(who)) is not None},
    }


def _bursts(evidence: Evidence, plan: Plan, phase: str, baselines: Sequence[str]) -> dict[str, Any] | None:
    """A measure timed in bursts (the steady state, or the device time): each side's median, the
    speedups and their 95% intervals over paired rounds."""
    # Work each call left on the device where the flag hidden_work sees it is part of the call.
    charged = checks.leftover_counted_ms(evidence, CANDIDATE, phase)
    candidate_rounds = checks.charged_rounds(evidence, CANDIDATE, phase, charged)
    candidate = [x for xs in candidate_rounds.values() for x in xs]
    if not candidate:
        return None
    measured = measurement.summarize(candidate)
    measured_baselines: dict[str, dict[str, Any]] = {}
    speedups: dict[str, float | None] = {}
    intervals: dict[str, tuple[float, float] | None] = {}
    for name in baselines:
        rounds = evidence.steady_rounds(name, phase)
        samples = [x for r in rounds.values() for x in r]
        if samples:
            measured_baselines[name] = {**measurement.summarize(samples), "rounds": len(rounds)}
            speedups[name] = measurement.speedup(samples, candidate)
            intervals[name] = measurement.speedup_interval(rounds, candidate_rounds, resamples=plan.bootstrap_resamples)
        elif phase == STEADY and name in evidence.cached_baselines and evidence.cached_baselines[name].get("steady_state"):
            cached = evidence.cached_baselines[name]["steady_state"]
            measured_baselines[name] = {**cached, "cached": True}
            speedups[name] = cached["median_ms"] / measured["median_ms"] if measured["median_ms"] > 0 else None
            # The cached side's own spread is not known here: the interval is the candidate's alone.
            low, high = measurement.median_interval(candidate)
            intervals[name] = (cached["median_ms"] / high, cached["median_ms"] / low) if low > 0 else None
    return {
        "candidate": {**measured, "rounds": len(candidate_rounds), "leftover_charged_us": charged * 1e3},
        "baselines": measured_baselines,
        "speedups": speedups,
        "speedup_intervals": {name: list(i) if i else None for name, i in intervals.items()},
        "beats": {name: bool(i and i[0] > BEATS) for name, i in intervals.items()},
        "target_fraction": plan.speedup_target,
    }


def _steady_state(evidence: Evidence, plan: Plan) -> dict[str, Any] | None:
    measured = _bursts(evidence, plan, STEADY, evidence.baselines)
    if measured is None:
        return None
    device = (
        "CUDA events around each call on the calling stream"
        if evidence.device == "cuda"
        else "a monotonic clock around each call"
    )
    steady = evidence.steady or {}
    stages = [b for b in evidence.bursts if b.get("phase", STEADY) == STEADY and b["round"] > 0]
    return {
        "what": "calls back to back, each on fresh inputs, as a model calling the kernel in a loop sees it",
        "method": (
            f"bursts of up to {steady.get('most_calls_per_burst')} calls, one burst of each side per round in "
            f"shuffled order, each side in its own process; {device}"
            f"{'; the device held before each call until the host has issued all of it' if evidence.device == 'cuda' else ''}"
            "; inputs uploaded and the cache flushed between calls outside the interval; one device-wide "
            "synchronize per burst, after which no work may be left (check no_hidden_work); median; 95% "
            "intervals by a paired bootstrap over rounds; each candidate call charged with its median drain beyond the "
            "eager reference's where the flag hidden_work sees it (leftover_charged_us)"
        ),
        **measured,
        "rounds": steady.get("rounds"),
        "stopped_by": steady.get("stopped_by"),
        # What the device still had to do after each side's bursts (check no_hidden_work), median and most,
        # in µs; `idle_sync`: the same synchronize again at once, on the idle device (the host's own share).
        "leftover_us": {
            who: {
                "median": statistics.median(values) * 1e3,
                "max": max(values) * 1e3,
                "bursts": len(values),
                **(
                    {"idle_sync": statistics.median(idle) * 1e3}
                    if (idle := [sync_ms for b in stages if b["who"] == who and (sync_ms := b.get("idle_sync_ms")) is not None])
                    else {}
                ),
            }
            for who in (CANDIDATE, *evidence.baselines)
            if (values := [b["leftover_ms"] for b in stages if b["who"] == who])
        },
        # Sides some of whose calls wait for the device inside the call: they ran without the hold, the
        # host's issuing inside their intervals.
        "ungated": sorted({b["who"] for b in stages if b.get("gated") is False} if evidence.device == "cuda" else []),
        "gate_forced_calls": {
            who: n
            for who in (CANDIDATE, *evidence.baselines)
            if (n := sum(b.get("gate_forced", 0) for b in evidence.bursts if b["who"] == who))
        },
        # Each call's gap from its end to the device drained, less the host's own share (the same gap after
        # a write of the harness's), median per side, µs (check no_hidden_work).
        "settle_us": _settle_us(evidence, STEADY),
        # The harness's own write's gap behind each side's drains (recorded to be judged once a GPU shows
        # its spread: work run while the harness waits for it lengthens it).
        "floor_us": _settle_us(evidence, STEADY, "floor_ms"),
        "converged": steady.get("stopped_by") == "interval",
    }


def _settle_us(evidence: Evidence, phase: str, gap: Literal["settle_ms", "floor_ms"] = "settle_ms") -> dict[str, float]:
    """Each side's median drain gap (us; `floor_ms`: the harness's own write's), the A/A control's among
    them where it ran: a process of the candidate's shape running the reference's kernels, which shows
    what that kind of process drains unlike eager's."""
    sides = (CANDIDATE, CONTROL, *evidence.baselines)
    return {who: statistics.median(gaps) * 1e3 for who in sides if (gaps := evidence.settle_ms(who, phase, gap))}


def _device_time(evidence: Evidence, plan: Plan) -> dict[str, Any] | None:
    state = evidence.device_time or {}
    if not state:
        return None
    unavailable = {who: why for who, why in state.get("captured", {}).items() if why != "captured"}
    measured = None if unavailable else _bursts(evidence, plan, DEVICE, [n for n in state.get("captured", {}) if n != CANDIDATE])
    return {
        "what": "the call captured in a CUDA graph and replayed: the device's own time for it, no launch from the host",
        "method": (
            "each side's call captured once in a CUDA graph on the harness's input buffers; replays in bursts as "
            "the steady state's calls, each on fresh inputs, the cache flushed before each, CUDA events around "
            "each replay; median; 95% intervals by a paired bootstrap over rounds"
        ),
        **(measured or {}),
        "unavailable": unavailable,
        # As the steady state's, for the replays (a report: no check reads it), µs.
        "settle_us": _settle_us(evidence, DEVICE),
        "rounds": state.get("rounds"),
        "stopped_by": state.get("stopped_by"),
        "converged": state.get("stopped_by") == "interval",
    }


# Without a control of its own (three GPU verdicts in four), a null result keeps a loss whose whole
# interval, widened by the device's spread between processes, lies below this: twice as slow as the
# reference's own kernels, far beyond any reading of the reference against itself on a GPU (0.93-1.10x:
# RESULTS.md, harness 13). A candidate can tell the profiled call from the timed ones and show the
# profiler the reference's kernels alone (an attacker's reading of harness 16): its loss is not hidden.
NULL_LOSS_WITHOUT_CONTROL = 0.5


def _slower_than_the_reference(evidence: Evidence, control: dict[str, Any] | None, eager: list[float] | None) -> bool:
    """The candidate is slower than the reference in a process of its own shape, in the same rounds,
    beyond the band a difference must clear (flags.aa_control's candidate_interval); without that
    control, on a GPU, slower than eager beyond NULL_LOSS_WITHOUT_CONTROL (`eager`: the widened
    interval). A CPU verification always runs its control."""
    interval = (control or {}).get("candidate_interval")
    if interval:
        return bool(interval[1] < 1 / BEATS)
    return bool(control is None and evidence.device == "cuda" and eager and eager[1] < NULL_LOSS_WITHOUT_CONTROL)


def _timing(evidence: Evidence, plan: Plan, control: dict[str, Any] | None, raised: dict[str, str]) -> dict[str, Any] | None:
    """`control`: the A/A control (flags.aa_control); `raised`: the flags, whose control_off and
    clock_unbounded say where no difference can be stated."""
    if not evidence.baselines:
        return None
    latency = _latency(evidence, plan)
    steady = _steady_state(evidence, plan)
    device_time = _device_time(evidence, plan)
    # The headline is the steady state where there is one (the device's work, each call issued in full
    # before the device runs it: callsite.c, the gate); the latency where bursts did not run.
    headline = steady or latency
    if headline is None:
        return None
    unavailable = {name: reason for name, reason in (evidence.prepared or {}).get("baselines", {}).items() if reason != "ready"}
    speedups, intervals, beats = headline["speedups"], headline.get("speedup_intervals", {}), headline.get("beats", {})
    # The rounds' interval covers what varies within one pair of processes; a second verification starts
    # new ones. The stated interval is where that second reading falls (measurement.reproduction_interval),
    # and only a win whose whole interval so widened clears the bar is one.
    noise = measurement.between_process(evidence.device_controls)
    # Each ratio's spread at its shorter side's call (a short call's spread is mostly a fixed time).
    spreads = {name: measurement.spread_at(noise, _shorter_call_ms(headline, name)) for name in intervals}
    closest = min(spreads.values(), key=lambda s: s["at_ms"] or math.inf, default=measurement.spread_at(noise, None))
    between: dict[str, Any] = {**noise, **closest}
    within = intervals
    intervals = {
        name: measurement.reproduction_interval(speedups[name], i, spreads[name]["spread"]) for name, i in within.items()
    }
    beats = {name: bool(i and i[0] > BEATS) for name, i in intervals.items()}
    null = null_result(evidence, speedups, intervals)
    # Against eager, the reference's own kernels are 1.0 by construction: the host's reading is not
    # stated, whichever way it leans (an unchanged forward read 0.31x and 1.91x on a loaded host), but
    # a loss beside the A/A control, the same kernels in the same kind of process and rounds, is the
    # candidate's own (work beyond the kernels: a sleep read 0.018x) and stays. The other baselines run
    # other code (Inductor's kernels, a graph replay): measured as any candidate is.
    if null and not _slower_than_the_reference(evidence, control, intervals.get("eager")):
        speedups, intervals, beats = {**speedups, "eager": 1.0}, {**intervals, "eager": [1.0, 1.0]}, {**beats, "eager": False}
    unstated = [raised[name] for name in ("control_off", "clock_unbounded") if name in raised]
    no_difference = {"why": "; ".join(unstated)} if unstated else None
    if no_difference:
        # The host times the candidate's kind of process unlike the baselines': no win is stated (each
        # interval reaches 1.0, which every page reads as no measurable difference), and a median above
        # 1.0 is not stated either (it ranked a 2.51x no-difference first); a loss stays a loss.
        no_difference["measured_speedups"] = speedups
        speedups = {name: min(s, 1.0) for name, s in speedups.items()}
        beats = dict.fromkeys(beats, False)
        intervals = {name: [min(i[0], 1.0), max(i[1], 1.0)] if i else None for name, i in intervals.items()}
    return {
        # Which measure the leaderboard's figures are.
        "headline": "steady_state" if steady else "latency",
        "method": headline["method"],
        "candidate": headline["candidate"],
        "baselines": headline["baselines"],
        "speedups": speedups,
        "speedup_intervals": intervals,
        "beats": beats,
        # Set where the headline is 1.0 by construction, not by measurement: what was measured, and why
        # it is not the kernel's.
        "null_result": null,
        # Set where the host's timing cannot state a difference (the A/A control read off 1.0, the
        # device's last one did, or the clock could not bound the candidate from below): why, and the
        # medians measured before they were capped at 1.0.
        "no_difference": no_difference,
        # The A/A control where it ran (flags.aa_control): off 1.0, and no win is stated.
        "control": control,
        # The rounds' own intervals (one pair of processes), and this device's spread between pairs of
        # processes that widened them, from its kept A/A controls; `device_control_off`: the device's
        # last control read off 1.0 and this verification ran none, so it states no win.
        "within_process_intervals": {name: list(i) if i else None for name, i in within.items()},
        "between_process": {**between, "device_control_off": flags.device_control_off(evidence, control)},
        "converged": headline.get("converged"),
        "stopped_by": headline.get("stopped_by"),
        "measures": {"steady_state": steady, "device_time": device_time, "latency": latency},
        "unavailable": unavailable,
        "candidate_ci_fraction": measurement.median_ci_fraction(
            evidence.steady_samples(CANDIDATE) or evidence.timed_samples(CANDIDATE)
        ),
        "harness_wake_up_ms": evidence.wake_up_ms(),
        "host_ms": (latency or {}).get("host_ms", {}),
        "speed_of_light": flags.sol_floor(evidence),
        "gpu": evidence.gpu or None,
        "wall_clock": {
            "candidate_median_ms": measurement.summarize([c.wall_ms for c in evidence.candidate_calls(TIMED)])["median_ms"],
            "note": "the parent's own clock around each whole latency call (input generation, flush, checks included)",
        },
    }


def _shorter_call_ms(headline: dict[str, Any], name: str) -> float | None:
    """The median call (ms) of the candidate or of baseline `name`, whichever is shorter."""
    calls = [headline["candidate"].get("median_ms"), (headline["baselines"].get(name) or {}).get("median_ms")]
    known = [ms for ms in calls if ms]
    return min(known) if known else None


def null_result(evidence: Evidence, speedups: dict[str, Any], intervals: dict[str, Any]) -> dict[str, Any] | None:
    """A candidate that launches exactly the reference's kernels, and nothing in its source that could
    launch them differently (streams, CUDA graphs), does the reference's work: it is 1.0x by
    construction, whatever a host measures (on a loaded 2-core host an unchanged forward read 1.91x,
    interval 1.65-2.17). Its headline says so, the measured ratios kept beside it."""
    why = flags.same_kernels_as_reference(evidence)
    facts = evidence.static.get("facts", {})
    if not why or (evidence.device == "cuda" and ("streams" in facts or "cuda_graphs" in facts)):
        # On a GPU the same kernels launched differently (overlapped on streams, replayed from a graph)
        # can be faster for real: that is measured, not assumed. On the CPU neither launches anything.
        return None
    return {
        "why": f"{why}; the same kernels do the same work, so any difference measured is the host's, not the code's",
        "measured_speedups": speedups,
        "measured_intervals": intervals,
    }


def _kernels(evidence: Evidence) -> dict[str, Any]:
    kernels = {}
    for call in evidence.calls:
        if call.phase == PROFILE and call.reply.get("kernels") is not None:
            kernels["candidate" if call.who == CANDIDATE else "reference"] = call.reply["kernels"]
    return kernels


def _reason(first: dict[str, Any] | None, timing: dict[str, Any] | None, entries: list[Check]) -> str:
    if first:
        return f"{first['name']}: {first['detail']}."
    speed = ""
    if timing and timing.get("null_result") and timing["speedups"].get("eager") == 1.0:
        speed = "; it runs the reference's own kernels, so it is 1.0x by construction (no speedup of its own)"
    elif timing and timing.get("speedups"):
        intervals = timing.get("speedup_intervals") or {}
        speed = "; " + ", ".join(_speedup_words(name, s, intervals.get(name)) for name, s in timing["speedups"].items())
    return f"All {len(entries)} checks passed{speed}."


def _speedup_words(name: str, speedup: float, interval: list[float] | None) -> str:
    """A speedup as every page reads it (court's Speedup.difference): where its 95% interval reaches
    within 1% of 1 it is no measurable difference, whatever the median says."""
    if interval and len(interval) == 2 and not (interval[0] > BEATS or interval[1] < 1 / BEATS):
        return f"no measurable difference from {name} ({speedup:.2f}x, 95% interval {interval[0]:.2f}-{interval[1]:.2f})"
    return f"{speedup:.2f}x over {name}"


def verdict(evidence: Evidence, *, plan: Plan, limits: Limits) -> Verdict:
    entries, first = checks.run_checks(evidence)
    # The A/A control, read once: the flag and the stated speedups judge the same interval.
    control = flags.aa_control(evidence, plan.bootstrap_resamples)
    raised = flags.run_flags(evidence, control)
    timing = _timing(evidence, plan, control, raised)
    status = first["status"] if first else VERIFIED
    if status == VERIFIED and not evidence.candidate_calls(TRIAL):
        status, first = "error", {"name": "candidate_runs", "detail": "the candidate was never run", "status": "error"}
    correctness = _correctness(evidence, plan)
    samples, needed = len(evidence.timed_samples(CANDIDATE)), min(plan.min_samples, plan.max_samples)
    # The steady rounds every ratio is drawn from: the candidate's, eager's and, where it ran, the control's.
    shared = set(evidence.steady_rounds(CANDIDATE)) & set(evidence.steady_rounds("eager"))
    control_rounds = set(evidence.steady_rounds(CONTROL))
    rounds = len(shared & control_rounds if control_rounds else shared)
    if status == VERIFIED and evidence.baselines and (samples < needed or rounds < INTERVAL_ROUNDS):
        # Right on every checked call, but with no speed worth stating: the timing loop stops a minute
        # before the wall limit, and a slow build, a wait for the device or a candidate spending its own
        # time can leave it none. Below INTERVAL_ROUNDS steady rounds no ratio has an interval, and with
        # none the A/A control, the clock's bound from below and a null result's kept loss all go quiet:
        # no speed is stated rather than one no check could question.
        short = (
            f"{samples} timed samples of the {needed} the plan needs"
            if samples < needed
            else f"{rounds} steady round(s) of the {INTERVAL_ROUNDS} an interval needs"
        )
        first = {
            "name": "timing_complete",
            "status": TIMEOUT,
            "detail": f"the wall limit ({limits.wall_time_s:.0f} s) came before the timing did: {short}, too few to "
            f"state a speed (the {correctness['checked_calls']} checked calls were right)",
        }
        status = TIMEOUT
        entries = [*entries, Check(name=first["name"], passed=False, detail=first["detail"])]
    result = {
        "harness_version": HARNESS_VERSION,
        "status": status,
        "reason": _reason(first, timing, entries),
        "checks": entries,
        "correctness": correctness,
        "flags": sorted(raised),
        "flag_details": raised,
        "kernels": _kernels(evidence),
        "static": evidence.static,
        "problem": {k: v for k, v in (evidence.problem or {}).items() if k not in ("ok", "spec")},
        "env": evidence.env or {},
        "sandbox": evidence.sandbox,
        "log_excerpt": evidence.log_excerpt,
        "cost": evidence.cost,
    }
    if timing:
        result["timing"] = timing
    cleaned: Verdict = clean(result)
    return cleaned


def failed_verdict(evidence: Evidence, reason: str) -> Verdict:
    """The verdict when the evidence cannot be judged: an error of the harness's, saying so."""
    cleaned: Verdict = clean(
        {
            "harness_version": HARNESS_VERSION,
            "status": "error",
            "reason": reason,
            "checks": [{"name": "harness_judged", "passed": False, "detail": reason}],
            "correctness": {},
            "flags": [],
            "flag_details": {},
            "kernels": {},
            "static": evidence.static,
            "problem": {},
            "env": evidence.env or {},
            "sandbox": evidence.sandbox,
            "log_excerpt": evidence.log_excerpt,
            "cost": evidence.cost,
        }
    )
    return cleaned
