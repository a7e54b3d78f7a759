"""The timing steps: the device's rates, the latency's shuffled rounds of single calls (`time`), the
steady state's rounds of bursts (`steady`, `burst`) with the GPU's state around them, the device time
of captured graphs' replays (`device_time`), and the profile of one call of each side.
"""

import time
from typing import TYPE_CHECKING, cast

from evaluation.harness import baseline_cache, checks, measurement
from evaluation.harness.evidence import (
    BASELINE,
    CANDIDATE,
    CONTROL,
    DEVICE,
    PROFILE,
    REFERENCE,
    STEADY,
    TIMED,
    WARMUP,
    Call,
    DeviceTimeRun,
    Fault,
    SteadyRun,
)
from evaluation.harness.process_requests import Stop
from evaluation.harness.verifying import Part

if TYPE_CHECKING:
    from evaluation.harness.gpu_state import Gpu


class Measures(Part):
    """What a verification times.
    A part of `pipeline.Verification`, which holds the state every part reads (its `__init__`); typed
    as the whole (verifying.Verifying)."""

    def measure_rates(self) -> None:
        """The device's ceilings, measured twice in the baseline process (no user code is loaded in any
        process yet, and the device lock keeps other verifications off the device), and kept for later
        verifications only where the two agree: each figure, never lowered by a later measurement, is
        the best the device has shown (contention only lowers a ceiling)."""
        first = self.ask(BASELINE, "rates", {}, self.limits.start_time_s).get("rates")
        second = self.ask(BASELINE, "rates", {}, self.limits.start_time_s).get("rates")
        if not first or not second:
            return
        self.evidence.rates = baseline_cache.best_rates(first, second)
        if baseline_cache.rates_agree(first, second):
            assert self.env_key is not None  # start_up keyed the device before measuring its rates
            baseline_cache.store_rates(self.cache_dir, self.env_key, self.evidence.rates)
        else:
            self.evidence.cost["rates_not_kept"] = "two measurements of the device's ceilings disagreed"

    def timed_sides(self) -> list[str]:
        ready = (self.evidence.prepared or {}).get("baselines", {})
        return [CANDIDATE] + [
            b for b in self.evidence.baselines if b not in self.evidence.cached_baselines and ready.get(b) == "ready"
        ]

    def time(self) -> None:
        """Shuffled rounds until every median is stable, then `timed_checks` closing rounds in which
        every candidate call is compared too; besides, any timed call is compared at random. The
        closing rounds are timed like the others and count as samples."""
        if not self.evidence.baselines:
            return

        sides = self.timed_sides()
        samples: dict[str, list[float]] = {side: [] for side in sides}
        plan = self.plan
        began = time.monotonic()
        closing = None
        for round_number in range(plan.warmup_rounds + plan.max_samples + plan.timed_checks):
            warm = round_number < plan.warmup_rounds
            if (
                closing is None
                and not warm
                and len(samples[CANDIDATE]) >= plan.min_samples
                and (
                    measurement.converged(samples, plan.target_ci, plan.min_samples)
                    or time.monotonic() - began > plan.timing_budget_s
                    or len(samples[CANDIDATE]) >= plan.max_samples
                )
            ):
                closing = plan.timed_checks
            if closing is not None:
                if closing == 0:
                    break
                closing -= 1
            self.rng.shuffle(sides)
            for side in sides:
                compared = side == CANDIDATE and (closing is not None or self.rng.random() < plan.timed_check_probability)
                call = self.call(side, WARMUP if warm else TIMED, compare=compared)
                if not warm:
                    assert call.ms is not None  # every call carries the call site's record of its time
                    samples[side].append(call.ms)
            if time.monotonic() > self.deadline - 60:
                break
        self._stop_if_failed()

    def steady_sides(self) -> list[str]:
        """The steady state's sides: the timed ones, and the A/A control where it runs."""
        return self.timed_sides() + ([CONTROL] if self.control else [])

    def burst_size(self) -> int:
        """The most calls a burst makes: within the plan's bytes for the inputs and outputs a burst
        holds at once (each call's outputs are kept, and staged on the host, until it ends) and within
        `burst_ms` of the eager reference's time."""
        problem = self.evidence.problem or {}
        per_call = 2 * (problem.get("input_bytes") or 0) + 2 * (problem.get("output_bytes") or 0) + 1
        by_time = self.plan.burst_ms / self.eager_ms if self.eager_ms else self.plan.burst_calls
        return max(1, min(self.plan.burst_calls, int(self.plan.burst_bytes // per_call), int(by_time)))

    def burst(self, who: str, count: int, round_number: int, compare_probability: float, phase: str = STEADY) -> list[Call]:
        """`count` calls of one side back to back (callsite.c, burst); which of the candidate's are
        compared is drawn once they have all returned. DEVICE: replays of the side's captured call."""
        seeds = [self.seed() for _ in range(count)]
        side = who if who in (CANDIDATE, CONTROL) else BASELINE
        fed = self.ask(
            REFERENCE,
            "feed_burst",
            {
                "seeds": seeds,
                "for_baseline": side == BASELINE,
                "for_control": side == CONTROL,
                "max_output_bytes": self.max_output_bytes,
            },
        )
        gated = self.device == "cuda" and who not in self.ungated
        message = {
            "seed": seeds[0],
            "inputs": fed["inputs"],
            "gate": gated,
            "graph": phase == DEVICE,
            **({"who": who} if side == BASELINE else {}),
        }
        each, name = self.call_limit()
        scaled = self.limits.call_time_factor * (self.eager_ms or 0) / 1e3
        reply, wall = self.timed_ask(
            side,
            "burst",
            message,
            each + count * scaled,
            f"{name}, plus as much for each call of a burst",
            watch_idle=side != CANDIDATE,
        )
        records, end = self.read_timing(side, "burst", burst=count)
        forced = sum(1 for r in records if r["ungated"]) if gated else 0
        if forced and 2 * forced >= len(records):
            self.ungated.add(who)
        self.evidence.bursts.append(
            {
                "who": who,
                "phase": phase,
                "round": round_number,
                "calls": len(records),
                "wall_ms": wall,
                "sum_ms": end["stream_ms"],
                "host_ms": end["host_ms"],
                "leftover_ms": end["ms"],
                "idle_sync_ms": end["idle_ms"],
                "gated": gated,
                "gate_forced": forced,
            }
        )
        facts = reply.get("calls", []) if side == CANDIDATE else []
        if side == CANDIDATE and (
            len(facts) != len([r for r in records if not r["raised"]]) or any(("output" in f) != (phase == STEADY) for f in facts)
        ):
            self.evidence.protocol.append("the candidate's process reported other calls of a burst than its call site made")
            raise Stop
        calls = []
        for index, record in enumerate(records):
            call_reply = {"ok": not record["raised"], **(facts[index] if index < len(facts) else {})}
            call = Call(who, phase, seeds[index], call_reply, wall / len(records), timing=record, burst=(round_number, index))
            self.evidence.calls.append(call)
            calls.append(call)
        if side == CONTROL and not reply.get("ok"):
            error = (reply.get("error") or {}).get("message", "no reason given")
            self.evidence.fault = Fault(
                CONTROL, "burst", "harness", f"the A/A control (the reference as a candidate) failed: {error}"
            )
            raise Stop
        if side != CANDIDATE:
            return calls
        if any(not (r["captured"] or r["raised"]) for r in records):
            self.evidence.protocol.append("the call site timed a call of the candidate's without capturing what it returned")
            raise Stop
        if not reply["ok"]:
            self._candidate_error("burst", reply)
        advance = bool((self.evidence.problem or {}).get("carries_state"))
        # One call of every burst is compared, and any other at the plan's rate, drawn now that all have
        # returned: a candidate that does the work only on some calls of a burst is caught on some burst.
        chosen = self.rng.randrange(len(calls))
        for index, call in enumerate(calls):
            if index == chosen or self.rng.random() < compare_probability:
                self.compare(call)
            else:
                self.ask(REFERENCE, "forget", {"seed": call.seed, "advance": advance})
        self._stop_if_failed()
        return calls

    def measure_steady(self) -> None:
        """The steady state with the GPU's state read around it (and its clocks locked, where allowed)."""
        if self.device != "cuda":
            with self.step("steady_state", into="timing_s"):
                self.evidence.steady = self.steady()
            return
        from evaluation.harness import gpu_state

        gpu = gpu_state.Gpu()
        self.evidence.gpu = {"clocks": gpu.lock(self.limits.lock_clocks_mhz), "before": gpu.read()}
        try:
            with self.step("steady_state", into="timing_s"):
                self.evidence.steady = self.steady(gpu)
            with self.step("device_time", into="timing_s"):
                self.device_time()
        finally:
            self.evidence.gpu["after"] = gpu.read()
            gpu.unlock()

    def steady(self, gpu: "Gpu | None" = None, phase: str = STEADY, sides: list[str] | None = None) -> SteadyRun:
        """Rounds of bursts, each side's in shuffled order, until every speedup's interval is within
        the plan's target or its budget is spent; round 0 warms up. Calls are compared as in `time`.
        DEVICE: the same, of the sides' captured calls (`sides`), within the device-time budget."""
        from evaluation.harness.gpu_state import steady as gpu_steady

        if not self.evidence.baselines:
            return {}
        if time.monotonic() > self.deadline - 60:
            return {"rounds": 0, "stopped_by": "wall limit"}
        sides = list(sides or self.steady_sides())
        plan = self.plan
        budget_s = plan.steady_budget_s if phase == STEADY else plan.device_time_budget_s
        most = self.burst_size()
        began = time.monotonic()
        stopped_by = "rounds"
        rounds = 0
        # Round 0 warms up, repeated (a few times at most) until the SM clock reads the same on both
        # sides of a round: the GPU is at its steady clock before any sample counts.
        for warm in range(plan.warm_rounds_most if phase == STEADY else 1):  # noqa: B007  (read after the loop)
            before = gpu.read() if gpu else {}
            for side in sides:
                self.burst(side, most, 0, plan.timed_check_probability / 4, phase)
            if gpu is None or gpu_steady(before, gpu.read()):
                break
        if gpu is not None:
            self.evidence.gpu["warm_rounds"] = warm + 1
        for round_number in range(1, plan.steady_max_rounds + 1):
            self.rng.shuffle(sides)
            for side in sides:
                self.burst(side, self.rng.randint((most + 1) // 2, most), round_number, plan.timed_check_probability / 4, phase)
            rounds = round_number
            if time.monotonic() > self.deadline - 60:
                stopped_by = "wall limit"
                break
            if round_number >= plan.steady_min_rounds and round_number % 2 == 0:
                candidate = self.evidence.steady_rounds(CANDIDATE, phase)
                fractions = [
                    measurement.interval_fraction(
                        measurement.speedup_interval(self.evidence.steady_rounds(b, phase), candidate, resamples=200),
                        measurement.speedup(
                            self.evidence.steady_samples(b, phase), self.evidence.steady_samples(CANDIDATE, phase)
                        ),
                    )
                    for b in sides
                    if b not in (CANDIDATE, CONTROL)
                ]
                if all(f <= plan.speedup_target for f in fractions):
                    stopped_by = "interval"
                    break
            # The budget stops no measure short of its least rounds (the A/A control's interval needs
            # three): a 2048^3 product on an H200 had spent a 2 s budget in two.
            if round_number >= plan.steady_min_rounds and time.monotonic() - began > budget_s:
                stopped_by = "budget"
                break
        return {
            "rounds": rounds,
            "stopped_by": stopped_by,
            "most_calls_per_burst": most,
            "seconds": round(time.monotonic() - began, 3),
        }

    def device_time(self) -> None:
        """Each side's call captured in a CUDA graph and its replays timed in bursts, as the steady state
        is (the device's own time for the call, no launch from the host). The candidate's replays are
        compared as its steady calls are. A side whose call cannot be captured has no device time."""
        if not self.evidence.baselines or not self.plan.device_time or time.monotonic() > self.deadline - 60:
            return
        captured = {
            who: self.call(who, DEVICE, compare=who == CANDIDATE).reply.get("graph", "not captured")
            for who in (CANDIDATE, "eager")
        }
        self.evidence.device_time = {"captured": captured}
        if all(state == "captured" for state in captured.values()):
            # A SteadyRun is a DeviceTimeRun without `captured`, which stays as set above.
            self.evidence.device_time.update(cast(DeviceTimeRun, self.steady(phase=DEVICE, sides=list(captured))))
            # Replays on fresh inputs that do not match the reference, from a candidate whose own calls
            # do: the graph is not the call (a launch outside the capture ran once, at capture time).
            # No device time, and no fault of the candidate's.
            if any(c.replay and c.checked and not checks.within_tolerance(c) for c in self.evidence.candidate_calls(DEVICE)):
                captured[CANDIDATE] = (
                    "its graph's replays gave other outputs than its calls on fresh inputs: some of the call's work "
                    "ran outside the capture (a raw kernel on the legacy default stream does not follow the capturing "
                    "stream) and is missing from the graph"
                )

    def profiles(self) -> bool:
        return self.plan.profile and bool(self.evidence.baselines)

    def profile(self) -> None:
        if self.profiles():
            self.call(CANDIDATE, PROFILE, compare=True, profile=True)
            self.call("eager", PROFILE, profile=True)
