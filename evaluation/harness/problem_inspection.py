"""What the verification learns of the problem, in the reference and baseline processes: refused before
any process starts where its inputs cannot fit, inspected (degeneracy, scale, FLOPs and bytes, its
output's own facts) while the baselines are built, and tried at other sizes of its constants (`shapes`).
"""

import math
from typing import Any

from evaluation.harness import baseline_cache, problem_shapes
from evaluation.harness.evidence import BASELINE, CANDIDATE, CONTROL, REFERENCE, VARIANT, Fault
from evaluation.harness.limits import memory_for
from evaluation.harness.process_requests import Stop
from evaluation.harness.sandbox import ProcessFault
from evaluation.harness.verifying import Part


class ProblemInspection(Part):
    """The problem's inspection and its other sizes.
    A part of `pipeline.Verification`, which holds the state every part reads (its `__init__`); typed
    as the whole (verifying.Verifying)."""

    def refuse_oversized(self) -> None:
        """A problem whose inputs cannot fit is refused before any process starts."""
        estimate = problem_shapes.input_bytes(self.problem_source)
        if estimate is None:
            return
        nbytes, detail = estimate
        room = memory_for("reference", self.limits)
        # The reference process holds the inputs once as made and once in float64.
        if 3 * nbytes > room:
            self.evidence.refused = (
                f"the problem's inputs take an estimated {nbytes / 2**30:.1f} GiB ({detail}); its reference "
                f"process, which holds them in float32 and in float64, may use {room / 2**30:.1f} GiB on this "
                "worker: make the problem's sizes smaller"
            )
            raise Stop

    def inspect_and_prepare(self, inspect: bool = True) -> None:
        """The reference process inspects the problem while the baseline process builds the baselines."""
        key = self.env_key
        assert key is not None  # start_up keyed the device before any process was asked to prepare
        cached = baseline_cache.load_baselines(self.cache_dir, self.problem_source, key)
        self.evidence.cached_baselines = {
            b: cached[b]
            for b in self.evidence.baselines
            if b != "eager" and isinstance(cached.get(b), dict) and cached[b].get("steady_state")
        }
        to_build = [b for b in self.evidence.baselines if b not in self.evidence.cached_baselines]
        if "eager" not in to_build:
            to_build.insert(0, "eager")
        inspecting = (
            self.send(
                REFERENCE,
                "inspect",
                {
                    "trial_seed": self.seed(),
                    "seeds": [self.seed(), self.seed()],
                    "count_flops": self.plan.speed_of_light and bool(self.evidence.baselines),
                },
            )
            if inspect
            else None
        )
        preparing = self.send(
            BASELINE,
            "prepare",
            {
                "problem_path": self.path(BASELINE, "problem.py"),
                "baselines": to_build,
                "setup_seed": self.seed(),
                "gpu_memory_fraction": self.limits.baseline_gpu_memory_fraction,
            },
        )
        start = self.limits.start_time_s, f"the start-up limit ({self.limits.start_time_s:.0f} s)"
        if inspecting:
            self.evidence.problem = self.receive(inspecting, *start)
        self.evidence.prepared = self.receive(preparing, *start)
        self.evidence.prepared["timer_method"] = self.described.get("timer_method")
        # Where the baselines' share of the verdict's time went: each one built here, or kept from an earlier run.
        self.evidence.cost["baselines_built_s"] = self.evidence.prepared.get("build_s") or {}
        self.evidence.cost["baselines_cached"] = sorted(self.evidence.cached_baselines)
        eager = self.evidence.prepared["baselines"].get("eager", "ready")
        if self.evidence.baselines and eager != "ready":
            # Every other figure is relative to eager, and the trials time it beside the candidate.
            self.evidence.fault = Fault(BASELINE, "prepare", "harness", f"the eager baseline {eager}")
            raise Stop
        warm = self.evidence.prepared.get("warm_calls") or 0
        if warm:
            # The reference's own time, from the call site's records: what a candidate call's limit scales with.
            try:
                records = self.timing[BASELINE].read_many(warm, timeout=10.0)
            except ProcessFault as fault:
                self.evidence.fault = Fault(BASELINE, "prepare", "harness", fault.detail)
                raise Stop from None
            self.eager_ms = sorted(r["ms"] for r in records)[len(records) // 2]
        self._stop_if_failed()
        problem = self.evidence.problem or {}
        output_bytes = problem.get("output_bytes") or 0
        self.max_output_bytes = 4 * output_bytes + (64 << 20)
        self.poison_outputs = not problem.get("reference_keeps_output")
        preparation = {
            "spec": problem.get("spec", []),
            "flush_bytes": self.described["flush_bytes"],
            "gpu_memory_fraction": self.limits.gpu_memory_fraction,
            "max_output_bytes": self.max_output_bytes,
            "poison_outputs": self.poison_outputs,
        }
        prime = self.profiles() or "compilation" in self.evidence.static.get("facts", {})
        self.ask(CANDIDATE, "prepare", {**preparation, "prime_compiler": prime}, self.limits.start_time_s)
        if self.control:
            self.ask(CONTROL, "prepare", {**preparation, "prime_compiler": False}, self.limits.start_time_s)

    def shapes(self) -> None:
        constants = problem_shapes.size_constants(self.problem_source)
        if not self.plan.shape_check or not constants:
            self.evidence.variant = {"status": "untestable", "detail": "the problem has no size constants to change"}
            return
        for variant in problem_shapes.variants(constants):
            probe = self.seed()
            try:
                self.ask(REFERENCE, "instantiate", {"seed": probe, "variant": variant})
                self.ask(REFERENCE, "try_variant", {"seed": probe, "variant": variant})
            except Stop:
                if self.evidence.fault and self.evidence.fault.kind != "harness":
                    raise
                self.evidence.fault = None
                continue
            self.evidence.variant = {"constants": variant, "status": "passed", "detail": ""}
            self._variant_call(variant)
            return
        self.evidence.variant = {"status": "untestable", "detail": "the reference itself fails at every other size tried"}

    def _variant_call(self, variant: dict[str, Any]) -> None:
        try:
            self.instantiate(self.seed(), variant)
            call = self.call(CANDIDATE, VARIANT, compare=True, variant=variant)
        except Stop:
            fault, self.evidence.fault = self.evidence.fault, None
            if fault is not None and fault.kind in ("timeout", "crashed", "memory", "protocol"):
                self.evidence.fault = fault  # the process is gone; the verdict must say why
            checked = self.evidence.variant
            assert checked is not None  # `shapes` set it before this call
            checked.update(
                {
                    "status": "failed",
                    "detail": f"at {variant} the candidate {'failed: ' + fault.detail if fault else 'broke a rule'}",
                }
            )
            raise
        comparison, checked = call.comparison, self.evidence.variant
        assert comparison is not None  # compare=True: a call that returns was compared
        assert checked is not None  # `shapes` set it before this call
        mismatch = comparison.get("max_rel_error")
        if (
            comparison.get("shape_mismatch")
            or comparison.get("structure_mismatch")
            or mismatch is None
            or mismatch > call.tolerance
            or comparison.get("nonfinite")
        ):
            checked.update(
                {
                    "status": "failed",
                    "detail": f"at {variant} the output is wrong "
                    f"(relative error {mismatch if mismatch is not None and math.isfinite(mismatch) else 'n/a'})",
                }
            )
        else:
            checked["detail"] = f"also right at {variant} (relative error {mismatch:.2g})"
