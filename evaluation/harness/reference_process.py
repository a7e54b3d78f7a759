"""The reference process: the problem alone, computing the truth the candidate is judged by.

It never loads candidate code. For each seed the parent sends, it generates the same inputs the
candidate process generated, runs the reference in float64 (falling back to float64 on the CPU,
then to float32, where an operator lacks float64 on the device), and keeps the result in its own
memory, which no other process can read (see sandbox.confine_self). It compares a candidate's
output only when the parent hands it the file the candidate process wrote.

`inspect` answers what the platform wants to know of a problem: whether its output is degenerate
(constant, or independent of its inputs up to rounding), whether its forward carries state from
one call to the next, how large its outputs are, how many FLOPs and bytes a call must at least cost.

A forward that carries state (an RNN cell keeping `self.hidden`) gives each call's output from
every call before it. The candidate's model sees every call, compared or not; so the parent has
this process `advance` its model on the inputs of each call it does not compare, and the reference
of a compared call comes from the same history of inputs the candidate's model went through.
"""

import math

import torch

from evaluation.harness import comparison, inputs, loading, output_facts, tolerance
from evaluation.harness.channel import Channel
from evaluation.harness.service import serve

_no_grad = torch.no_grad
# Two float32 calls of one model on the same inputs further apart than this (relative error) come
# from state the first call left behind, not from rounding: nondeterministic kernels (atomics) move
# float32 outputs by ~1e-7.
STATE_CHANGE = 1e-4


def _leaves(value) -> list:
    _, leaves = output_facts.flatten(value)
    return leaves


def _spec(leaves: list) -> list[dict]:
    return [
        {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape), "device": t.device.type}
        if isinstance(t, torch.Tensor) else {"type": type(t).__name__}
        for t in leaves
    ]


def _bytes_of(values) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


class ReferenceProcess:
    def __init__(self):
        self.kept: dict[int, list] = {}
        self.runner = None

    def prepare(self, request: dict) -> dict:
        self.device = request["device"]
        if self.device == "cuda":
            torch.cuda.init()
        self.problem, self.proof = loading.load_problem(request["problem_path"], request.get("proof_path"))
        return {"ok": True}

    def instantiate(self, request: dict) -> dict:
        args = loading.init_inputs(self.problem, request.get("variant"))
        self.model32 = loading.build_model(self.problem.Model, args, request["seed"], self.device)
        self.runners = self._runners()
        return {"ok": True}

    def _runners(self) -> list:
        """Float64 on the device, float64 on the CPU, float32 on the device: the first that runs wins."""
        runners = []
        for runner in ((self.device, "float64"), ("cpu", "float64"), (self.device, "float32")):
            if runner not in runners:
                runners.append(runner)
        return runners

    def _run(self, model, args, seed: int):
        loading.seed_everything(seed + 1)
        with _no_grad():
            return model(*args)

    def _reference(self, args: list, seed: int) -> tuple[list, str]:
        last_error = None
        for where, precision in self.runners:
            try:
                if precision == "float64":
                    model = loading.float64_copy(self.model32).to(where)
                    moved = loading.to_float64(loading.to_device(args, where))
                    previous = torch.get_default_dtype()
                    torch.set_default_dtype(torch.float64)
                    try:
                        out = self._run(model, moved, seed)
                    finally:
                        torch.set_default_dtype(previous)
                else:
                    out = self._run(self.model32, args, seed)
                leaves = [t.to(self.device) if isinstance(t, torch.Tensor) else t for t in _leaves(out)]
                self.runners = [(where, precision)]
                return leaves, f"{precision} on {where}"
            except Exception as exc:
                last_error = exc
        raise last_error

    def _inputs(self, request: dict) -> list:
        source = self.proof if request.get("proof") else self.problem
        return inputs.generate(source, request["seed"], self.device, request.get("variant"), self.problem)

    def reference(self, request: dict) -> dict:
        args = self._inputs(request)
        fingerprints = inputs.fingerprints(args)
        reference, precision = self._reference(args, request["seed"])
        fp32 = _leaves(self._run(self.model32, args, request["seed"]))
        calibration = comparison.compare(fp32, reference)
        # Where the problem's own float32 output is further from float64 than any tolerance allows
        # (outputs that underflow float32, long recurrences), no float32 candidate can match float64:
        # the float32 output is kept too, and candidates are held to it (`float32_reference_inexact`).
        error = calibration.get("max_rel_error")
        inexact = error is not None and not math.isnan(error) and error > tolerance.CEILING
        self.kept[request["seed"]] = (reference, fp32 if inexact and not calibration.get("reference_nan") else None)
        return {"ok": True, "inputs": fingerprints, "spec": _spec(fp32), "precision": precision,
                "float32_error": {k: calibration[k] for k in ("max_abs_error", "max_rel_error", "rel_l2_error", "nonfinite")},
                "output_scale": calibration["output_scale"], "reference_nan": calibration["reference_nan"]}

    def compare(self, request: dict) -> dict:
        reference, fp32 = self.kept.pop(request["seed"])
        leaves = [output_facts.read_dump(entry, self.device) if entry["kind"] == "tensor" else None
                  for entry in request["files"]]
        result = comparison.compare(leaves, reference)
        if fp32 is not None:
            result["against_float32"] = comparison.compare(leaves, fp32)
        return {"ok": True, "comparison": result}

    def advance(self, request: dict) -> dict:
        """Run the float32 model on the call's inputs and keep nothing but its state: the float64
        reference of a later call is a copy of this model, state included. Synchronised, so no
        reference work runs on the device while the candidate's next call is timed."""
        self._run(self.model32, self._inputs(request), request["seed"])
        if self.device == "cuda":
            torch.cuda.synchronize()
        return {"ok": True}

    def forget(self, request: dict) -> dict:
        self.kept.pop(request["seed"], None)
        return {"ok": True}

    def inspect(self, request: dict) -> dict:
        """Degeneracy, output scale, FLOPs and bytes, from the problem alone."""
        self.instantiate({"seed": request["trial_seed"]})
        first, second = request["seeds"]
        a = self._inputs({"seed": first})
        b = self._inputs({"seed": second})
        ref_a, precision = self._reference(a, first)
        ref_a_again, _ = self._reference(a, first)
        ref_b, _ = self._reference(b, second)
        if request.get("count_flops"):
            # The counter's dispatch mode imports torch._dynamo (seconds on a CPU): only when asked.
            from torch.utils.flop_counter import FlopCounterMode

            counter = FlopCounterMode(display=False)
            with counter:
                fp32_a = _leaves(self._run(self.model32, a, first))
            flops = int(counter.get_total_flops())
        else:
            fp32_a, flops = _leaves(self._run(self.model32, a, first)), None
        # The same inputs once more, on the same model: a forward that carries state answers differently.
        state = comparison.compare(_leaves(self._run(self.model32, a, first)), fp32_a)
        rounding = comparison.compare(fp32_a, ref_a)
        repeat = comparison.compare(ref_a_again, ref_a)
        across = comparison.compare(ref_b, ref_a)
        noise = rounding["max_abs_error"] or 0.0
        variation = across["max_abs_error"]
        constant = all(
            isinstance(t, torch.Tensor) and t.numel() > 0 and bool((t == t.reshape(-1)[0]).all().item())
            for t in ref_a + ref_b
        )
        independent = variation is not None and variation <= max(4 * noise, 0.0)
        scale = rounding["output_scale"]
        parameters = list(self.model32.parameters()) + list(self.model32.buffers())
        reasons = []
        if constant:
            reasons.append("every element of the output has the same value on every input")
        elif independent:
            reasons.append(f"the output does not depend on the inputs: two input sets give outputs {variation:.3g} "
                           f"apart, within float32 rounding ({noise:.3g})")
        return {
            "ok": True,
            "degenerate": bool(constant or independent),
            "reason": "; ".join(reasons),
            "constant_output": bool(constant),
            "independent_of_inputs": bool(independent),
            "nondeterministic": bool((repeat["max_rel_error"] or 0.0) > 1e-9),
            "carries_state": bool((state["max_rel_error"] or 0.0) > STATE_CHANGE),
            "output_scale": scale,
            "float32_error": {k: rounding[k] for k in ("max_abs_error", "max_rel_error", "rel_l2_error")},
            "reference_precision": precision,
            "reference_nan": rounding["reference_nan"],
            "spec": _spec(fp32_a),
            "inputs": inputs.describe(a),
            "flops": flops,
            "bytes": _bytes_of(a) + _bytes_of(fp32_a) + _bytes_of(parameters),
            "input_bytes": _bytes_of(a),
            "output_bytes": _bytes_of(fp32_a),
            "parameter_bytes": _bytes_of(parameters),
        }

    def finish(self, request: dict) -> dict:
        return {"ok": True}


_HANDLERS = {
    "prepare": ReferenceProcess.prepare,
    "instantiate": ReferenceProcess.instantiate,
    "reference": ReferenceProcess.reference,
    "compare": ReferenceProcess.compare,
    "advance": ReferenceProcess.advance,
    "forget": ReferenceProcess.forget,
    "inspect": ReferenceProcess.inspect,
    "finish": ReferenceProcess.finish,
}


def main(read_fd: int, write_fd: int) -> None:
    serve(Channel(read_fd, write_fd), _HANDLERS, ReferenceProcess())

