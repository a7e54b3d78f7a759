"""The candidate's (and a baseline's) calls one at a time: loading and instantiating the candidate, one
call of a side on fresh inputs from the reference process, its comparison there, the limits a call runs
under, and the checking steps made of such calls (`trials`, `proof`).
"""

from typing import Any

from evaluation.harness import scoring
from evaluation.harness.evidence import (
    BASELINE,
    CANDIDATE,
    CONTROL,
    DEVICE,
    PROOF,
    REFERENCE,
    TIMED,
    TRIAL,
    VARIANT,
    WARMUP,
    Call,
    Fault,
)
from evaluation.harness.process_requests import PROOF_SIDE, Stop
from evaluation.harness.verifying import Message, Part

# Every check reads all the evidence so far: in the timing loop they run after each compared call and
# every CHECK_EVERY calls (and once after the loop), not after each.
CHECK_EVERY = 16


class Calls(Part):
    """Loading, instantiating, calling and comparing.
    A part of `pipeline.Verification`, which holds the state every part reads (its `__init__`); typed
    as the whole (verifying.Verifying)."""

    def needs_jit(self) -> bool:
        """Whether the candidate may compile at its first call (torch.compile, Triton, a lazy load_inline)."""
        facts = self.evidence.static.get("facts", {})
        return any(name in facts for name in ("compilation", "triton", "custom_cuda"))

    def call_limit(self) -> tuple[float, str]:
        """A call after the build: a multiple of the reference's own eager time, within bounds."""
        limits = self.limits
        if self.eager_ms is None:
            return limits.call_time_s, f"the call limit ({limits.call_time_s:.0f} s)"
        scaled = limits.call_time_factor * self.eager_ms / 1e3
        limit = min(limits.call_time_s, max(limits.call_time_min_s, scaled))
        return limit, (
            f"the call limit ({limit:.0f} s: {limits.call_time_factor:g} times the reference's "
            f"{self.eager_ms:.3g} ms, at least {limits.call_time_min_s:.0f} s)"
        )

    def first_call_limit(self) -> tuple[float, str]:
        if self.needs_jit():
            return self.limits.build_time_s, (
                f"the build limit ({self.limits.build_time_s:.0f} s, for the first call of a "
                "new instance, where torch.compile and Triton compile)"
            )
        limit = max(self.call_limit()[0], self.limits.first_call_time_s)
        return limit, (f"the first call's limit ({limit:.0f} s; the source names nothing that compiles at its first call)")

    def load(self) -> None:
        reply = self.ask(
            CANDIDATE,
            "load",
            {"candidate_path": self.path(CANDIDATE, "candidate.py")},
            self.limits.build_time_s,
            f"the build limit ({self.limits.build_time_s:.0f} s, for loading the candidate)",
        )
        self.evidence.loaded = reply  # its facts count even when loading failed (an audit hook refused, say)
        if not reply["ok"]:
            self._candidate_error("load", reply)
        self._stop_if_failed()
        if self.control:
            self._control("load", {"candidate_path": self.path(CONTROL, "control.py")})

    def instantiate(self, seed: int, variant: dict[str, Any] | None = None, *, first: bool = False) -> None:
        init = self.ask(REFERENCE, "instantiate", {"seed": seed, "variant": variant})["init"]
        limit = (
            (self.limits.build_time_s, f"the build limit ({self.limits.build_time_s:.0f} s, for building ModelNew)")
            if first
            else self.call_limit()
        )
        reply = self.ask(CANDIDATE, "instantiate", {"seed": seed, "init": init}, *limit)
        self.evidence.instantiations.append(reply)
        if not reply["ok"]:
            self._candidate_error("instantiate", reply)
        self.building = True
        self._stop_if_failed()
        if self.control and first and variant is None:
            # The same weights as the reference's (the same seed), for the A/A control's calls.
            self._control("instantiate", {"seed": seed, "init": init})

    def _control(self, stage: str, message: Message) -> None:
        """A request of the A/A control's process; its failure (the problem's own code) is the harness's."""
        reply = self.ask(CONTROL, stage, message, self.limits.build_time_s)
        if not reply.get("ok"):
            error = (reply.get("error") or {}).get("message", "no reason given")
            self.evidence.fault = Fault(
                CONTROL, stage, "harness", f"the A/A control (the reference as a candidate) failed: {error}"
            )
            raise Stop

    def call(
        self, who: str, phase: str, *, compare: bool = False, variant: dict[str, Any] | None = None, profile: bool = False
    ) -> Call:
        """One call of a side. DEVICE: the call that fills the side's input slots before its capture in
        a CUDA graph (the `graph` request; see `device_time`)."""
        seed = self.seed()
        stage = "graph" if phase == DEVICE else "call"
        if who != CANDIDATE:
            return self._baseline_call(who, phase, seed, variant, profile, stage)
        fed = self.ask(
            REFERENCE,
            "feed",
            {"seed": seed, "variant": variant, "proof": phase == PROOF, "max_output_bytes": self.max_output_bytes},
        )
        message = {"seed": seed, "inputs": fed["inputs"], "profile": profile}
        if profile:
            limit = (self.limits.call_time_s, f"the limit on a profiled call ({self.limits.call_time_s:.0f} s)")
        elif stage == "graph":
            limit = (
                self.limits.call_time_s,
                f"the limit on a call ({self.limits.call_time_s:.0f} s), for capturing it in a graph",
            )
        elif self.building:
            limit, self.building = self.first_call_limit(), False
        else:
            limit = self.call_limit()
        reply, wall = self.timed_ask(CANDIDATE, stage, message, *limit)
        timing = self.read_timing(CANDIDATE, stage)
        call = Call(CANDIDATE, phase, seed, reply, wall, timing=timing)
        self.evidence.calls.append(call)
        if not (timing["captured"] or timing["raised"]):
            self.evidence.protocol.append("the call site timed a call of the candidate's without capturing what it returned")
            raise Stop
        if not reply["ok"]:
            self.ask(REFERENCE, "forget", {"seed": seed})
            self._candidate_error(stage, reply)
        if not compare:
            self.ask(REFERENCE, "forget", {"seed": seed, "advance": bool((self.evidence.problem or {}).get("carries_state"))})
        # Every check reads all the evidence so far: in the timing loop they run after each
        # compared call and every CHECK_EVERY calls (and once after the loop), not after each.
        self.unchecked += 1
        if compare or phase not in (WARMUP, TIMED) or self.unchecked >= CHECK_EVERY:
            self._stop_if_failed()
        if compare:
            self.compare(call)
        return call

    def _baseline_call(self, who: str, phase: str, seed: int, variant: dict[str, Any] | None, profile: bool, stage: str) -> Call:
        fed = self.ask(REFERENCE, "feed", {"seed": seed, "variant": variant, "for_baseline": True})
        reply, wall = self.timed_ask(
            BASELINE,
            stage,
            {"who": who, "seed": seed, "inputs": fed["inputs"], "profile": profile},
            watch_idle=phase in (WARMUP, TIMED),
        )
        call = Call(who, phase, seed, reply, wall, timing=self.read_timing(BASELINE, stage))
        self.evidence.calls.append(call)
        return call

    def compare(self, call: Call) -> None:
        reply = self.ask(REFERENCE, "compare", {"seed": call.seed})
        call.reference = {k: v for k, v in reply.items() if k not in ("comparison", "nonce", "ok")}
        comparison = reply["comparison"]
        spec = reply.get("spec") or [{}]
        dtype = next((leaf.get("dtype") for leaf in spec if leaf.get("dtype")), "float32")
        float32 = comparison.pop("against_float32", None)
        if float32 is not None:
            # The problem's own float32 output is beyond any tolerance from float64: the candidate
            # is held to that float32 output at the base tolerance instead (flag float32_reference_inexact).
            call.comparison = {**float32, "against": "float32", "float64_max_rel_error": comparison.get("max_rel_error")}
            call.tolerance = scoring.tolerance_for(dtype, None)
        else:
            call.comparison = comparison
            call.tolerance = scoring.tolerance_for(dtype, (reply.get("float32_error") or {}).get("max_rel_error"))
        if call.phase != VARIANT:
            self._stop_if_failed()

    def trials(self) -> None:
        for trial in range(self.plan.trials):
            self.instantiate(self.seed(), first=trial == 0)
            for _ in range(self.plan.inputs_per_trial):
                sides = [CANDIDATE] + (["eager"] if self.evidence.baselines else [])
                self.rng.shuffle(sides)
                for side in sides:
                    self.call(side, TRIAL, compare=side == CANDIDATE)

    def proof(self) -> None:
        if not self.proof_source:
            return
        generating = self.send(PROOF_SIDE, "inputs", {"seed": self.seed()})
        taking = self.send(REFERENCE, "take_proof", {"max_bytes": self.limits.proof_input_bytes, "seed": self.seed()})
        self.receive(generating)
        self.receive(taking)
        self.call(CANDIDATE, PROOF, compare=True)
