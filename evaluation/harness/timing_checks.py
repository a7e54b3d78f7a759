"""Integrity checks of the times: a broken rule is `rejected`. Every time the call site wrote fits the
parent's own clock (`clock_consistent`), and no call left work on the device outside its interval
(`no_hidden_work`); below the rejection such work is flagged (`hidden_work`) and charged to the
candidate's calls (`leftover_counted_ms`, `charged_rounds`).
"""

import statistics
from typing import Any

from evaluation.harness import measurement
from evaluation.harness.check_outcome import Outcome, fail, ok
from evaluation.harness.evidence import CANDIDATE, CONTROL, DEVICE, STEADY, TIMED, WARMUP, Evidence

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
    return [(b["wall_ms"] - sum_ms) / b["calls"] for b in bursts if (sum_ms := b.get("sum_ms")) is not None and b["calls"]]


def clock_bound(evidence: Evidence) -> dict[str, Any] | None:
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
    calls = [(ms, c.wall_ms) for c in evidence.calls if (ms := c.ms) is not None and c.phase in (TIMED, WARMUP)]
    calls += [(sum_ms, b["wall_ms"]) for b in evidence.bursts if (sum_ms := b.get("sum_ms")) is not None]
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
# to 7.9 us beyond eager's (RESULTS.md, harness 11); on an H200 up to 16 us on 76-us calls, and a Triton
# row norm of 50-us calls at 13.8 us was rejected under a floor of 10 (harness 15): the floor of the first
# pair stands twice above that. Below it nothing is gained: the excess is charged to each call
# (leftover_counted_ms).
SETTLE_REJECT = (0.030, 0.15)
# The flag's share is below the band a win must clear (verdict.BEATS, 1%): work left uncharged can never
# make a win of the reference's own work. At 5% a 1 ms call left 47 us on a side stream, unflagged and
# uncharged, and read a 1.05x win (an attacker's reading of harness 16).
SETTLE_FLAG = (0.001, 0.01)


# The least burst calls a side needs for its median drain to be judged. Calls of 10 ms or more, or
# with inputs near the plan's burst_bytes, make bursts of one call, one a round: with ten needed, such
# a candidate's drain was never judged nor charged (an attacker's reading of harness 14). Every measure
# runs steady_min_rounds (6) at least; a single wake-up cannot move a median of five, and the bars
# scale with the call.
DRAIN_LEAST_CALLS = 5


def _drain_excess(evidence: Evidence, who: str, phase: str) -> tuple[float, float, float] | None:
    """`who`'s burst calls' median drain gap beyond the eager reference's, its median call, and its own
    median drain gap (ms)."""
    own, eager = evidence.settle_ms(who, phase), evidence.settle_ms("eager", phase)
    samples = [c.ms for c in evidence.calls if c.who == who and c.phase == phase and c.ms is not None]
    if len(own) < DRAIN_LEAST_CALLS or len(eager) < DRAIN_LEAST_CALLS or not samples:
        return None
    return statistics.median(own) - statistics.median(eager), statistics.median(samples), statistics.median(own)


# A drain gap is the call's wait less the harness's own write's (callsite.c): the write's wait is the
# host's wake-up, and a call's is at least that, so honest medians are positive (4.8 to 22.8 us on an
# H200 for candidates, 2.9 to 20.7 us for eager: RESULTS.md, harness 15). One below zero means the
# harness's own write waited longer than the call: the device ran something after the call had
# returned, while the write was timed (a native thread needs no GIL to launch it). Such a drain is
# judged by how far it lies below eager's, as one above is.
def _drain_below(found: tuple[float, float, float], floor_ms: float) -> bool:
    return found[2] < -floor_ms and found[0] < 0


def leftover_counted_ms(evidence: Evidence, who: str, phase: str) -> float:
    """What each of `who`'s burst calls is charged for work it left on the device: its median drain gap
    beyond the eager reference's, where the flag hidden_work sees it (SETTLE_FLAG); nothing below that,
    where the hosts' wake-ups differ by as much (honest kernels alone on an H100: 0.4 us at the median).
    Work left below the rejection then gains nothing: a product of a few microseconds left on a side
    stream read 3.4x over eager on an H200 while it was only flagged (RESULTS.md, harness 13). A drain
    below zero (_drain_below) is charged how far it lies below eager's: work run after the call returned."""
    if evidence.device != "cuda":
        return 0.0
    found = _drain_excess(evidence, who, phase)
    if found is None:
        return 0.0
    excess, typical, _ = found
    floor_ms, share = SETTLE_FLAG
    if _drain_below(found, floor_ms):
        return -excess
    return excess if excess > max(floor_ms, share * typical) else 0.0


def charged_rounds(evidence: Evidence, who: str, phase: str = STEADY, charged: float | None = None) -> dict[int, list[float]]:
    """`who`'s samples of a burst measure by round, each charged with the work it left (`charged`, where
    the caller has it: leftover_counted_ms)."""
    if charged is None:
        charged = leftover_counted_ms(evidence, who, phase)
    return {r: [x + charged for x in xs] for r, xs in evidence.steady_rounds(who, phase).items()}


def _settle_excess(evidence: Evidence, floor_ms: float, share: float, phases: tuple[str, ...] = (STEADY, DEVICE)) -> str | None:
    for phase in phases:
        found = _drain_excess(evidence, CANDIDATE, phase)
        if found is None:
            continue
        excess, typical, own = found
        if excess > max(floor_ms, share * typical):
            return (
                f"the device was still busy after the candidate's calls had ended on the calling stream: "
                f"{excess * 1e3:.1f} us more than after the eager reference's at the median, while a call is measured "
                f"at {typical * 1e3:.1f} us; work left on another stream or thread runs outside the timed interval. "
                "Do all of forward's work on the calling stream, or have that stream wait for it before returning"
            )
        if _drain_below(found, floor_ms):
            return (
                f"the harness's own write after each call waited {-own * 1e3:.1f} us longer than the call's drain at "
                f"the median ({-excess * 1e3:.1f} us below the eager reference's), while a call is measured at "
                f"{typical * 1e3:.1f} us: the device ran work after the call had returned, outside the timed "
                "interval. Do all of forward's work on the calling stream, before it returns"
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
