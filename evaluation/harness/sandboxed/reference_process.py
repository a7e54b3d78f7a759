"""The reference process: the problem alone, the inputs of every call, and the truth candidates are
judged by.

It never loads candidate code. For each candidate call the parent asks it to `feed` a seed: it
generates the call's inputs (or takes a hack report's proof inputs, which arrive as data from the
proof process), keeps them, and hands their bytes to its courier. The courier is a thread that
serves the candidate's call site over two pipes: when the call site says it is ready (inside its
window), the courier writes the inputs; when the call returns, the call site writes what it
returned, and the courier keeps those bytes. Whether they are compared is decided afterwards by the
parent: `compare` runs the reference in float64 on the kept inputs (falling back to float64 on the
CPU, then float32, where an operator lacks float64 on the device) and compares; `forget` drops them.
Every frame from the candidate's side is a claim: one out of order, malformed or too large is a
protocol fault the parent rejects the candidate for.

`inspect` answers what the platform wants to know of a problem: whether its output is degenerate
(constant, or independent of its inputs up to rounding), whether its forward carries state from
one call to the next, how large its outputs are, how many FLOPs and bytes a call must at least cost.

A forward that carries state (an RNN cell keeping `self.hidden`) gives each call's output from
every call before it; the candidate's model sees every call, compared or not, so `forget` runs this
process's model on the call's inputs too, and the reference of a compared call comes from the same
history of inputs the candidate's model went through.
"""

import collections
import json
import math
import os
import struct
import threading
from collections.abc import Callable
from typing import Any

import torch

from evaluation.harness import tolerance
from evaluation.harness.channel import Channel
from evaluation.harness.sandboxed import comparison, frames, inputs, loading, output_facts, values
from evaluation.harness.sandboxed.request_loop import serve

_no_grad = torch.no_grad
# Two float32 calls of one model on the same inputs further apart than this (relative error) come
# from state the first call left behind, not from rounding: nondeterministic kernels (atomics) move
# float32 outputs by ~1e-7.
STATE_CHANGE = 1e-4
PROOF_SPEC_BYTES = 2**20


def _leaves(value: object) -> list[Any]:
    _, leaves = frames.structure_of(value)
    return leaves


def _spec(leaves: list[Any]) -> list[dict[str, Any]]:
    return [
        {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape), "device": t.device.type}
        if isinstance(t, torch.Tensor)
        else {"type": type(t).__name__}
        for t in leaves
    ]


def _bytes_of(values_: list[Any]) -> int:
    return sum(v.numel() * v.element_size() for v in values_ if isinstance(v, torch.Tensor))


class CaptureProtocolError(Exception):
    pass


class Courier(threading.Thread):
    """Serves one process's call site: inputs out when it is ready, outputs kept when it returns
    (`outputs="keep"`: the candidate's); the baseline process's call site gets its inputs the same way
    and returns none (`"none"`); the control's (the reference in a candidate-shaped process, timed
    against eager) returns its outputs as a candidate's does, and they are dropped (`"drop"`)."""

    def __init__(self, capture_fd: int, input_fd: int, *, outputs: str = "keep"):
        super().__init__(daemon=True, name="courier")
        self.capture_fd, self.input_fd = capture_fd, input_fd
        self.expects_outputs = outputs != "none"
        self.keeps_outputs = outputs == "keep"
        self.lock = threading.Condition()
        self.pending: collections.deque[tuple[int, bytes]] = collections.deque()  # (key, payload) fed and not yet asked for
        self.ends = False  # a burst: the READY after the last pending inputs is answered with END
        self.awaiting: collections.deque[tuple[int, int]] = (
            collections.deque()
        )  # (key, sequence): inputs sent, outputs not yet back
        self.outputs: dict[int, bytes] = {}  # a call's outputs frame, by key
        self.violation: str | None = None
        self.max_frame = 1 << 20

    def feed(self, items: list[tuple[int, bytes]], max_output_bytes: int, *, ends: bool) -> None:
        """(key, payload) per call, in order; `ends`: a burst, whose READY after the last is answered with END."""
        with self.lock:
            self.pending = collections.deque(items)
            self.ends = ends
            self.max_frame = max_output_bytes + (1 << 20)

    def take(self, key: int, timeout: float = 60.0) -> bytes:
        with self.lock:
            if not self.lock.wait_for(lambda: key in self.outputs or self.violation, timeout):
                raise CaptureProtocolError("the call site sent no outputs for the call")
            if self.violation:
                raise CaptureProtocolError(self.violation)
            return self.outputs.pop(key)

    def drop(self, key: int) -> None:
        with self.lock:
            self.outputs.pop(key, None)

    def _fail(self, what: str) -> None:
        with self.lock:
            self.violation = self.violation or what
            self.lock.notify_all()
        for fd in (self.input_fd, self.capture_fd):
            try:
                os.close(fd)
            except OSError:
                pass

    def run(self) -> None:
        try:
            while True:
                kind, sequence, payload = frames.read_frame(self.capture_fd, self.max_frame)
                with self.lock:
                    if kind == frames.READY and self.pending:
                        key, data = self.pending.popleft()
                        if self.expects_outputs:
                            self.awaiting.append((key, sequence))
                        answer = frames.INPUTS
                    elif kind == frames.READY and self.ends:
                        self.ends = False
                        data, answer = b"", frames.END
                    elif kind == frames.OUTPUTS and self.awaiting and self.awaiting[0][1] == sequence:
                        key = self.awaiting.popleft()[0]
                        if self.keeps_outputs:
                            self.outputs[key] = payload
                            self.lock.notify_all()
                        continue
                    else:
                        raise CaptureProtocolError(f"a {frames.KIND_NAMES[kind]} frame the call site had no reason to send")
                frames.write_frame(self.input_fd, answer, sequence, data)
        except frames.FrameError as exc:
            self._fail(f"the capture pipe carried {exc}")
        except CaptureProtocolError as exc:
            self._fail(f"the capture pipe carried {exc}")
        except OSError as exc:
            self._fail(f"the capture pipe failed: {exc}")


class ReferenceProcess:
    def __init__(
        self,
        capture_fd: int,
        input_fd: int,
        proof_fd: int,
        baseline_ready_fd: int,
        baseline_input_fd: int,
        control_capture_fd: int = -1,
        control_input_fd: int = -1,
    ):
        self.kept: dict[int, dict[str, Any]] = {}
        self.courier = Courier(capture_fd, input_fd) if capture_fd >= 0 else None
        self.baseline_courier = Courier(baseline_ready_fd, baseline_input_fd, outputs="none") if baseline_ready_fd >= 0 else None
        self.control_courier = Courier(control_capture_fd, control_input_fd, outputs="drop") if control_capture_fd >= 0 else None
        self.proof_fd = proof_fd
        self.proof_inputs: list[Any] | None = None

    def prepare(self, request: dict[str, Any]) -> dict[str, Any]:
        self.device = request["device"]
        if self.device == "cuda":
            torch.cuda.init()
        self.problem, _ = loading.load_problem(request["problem_path"], None)
        for courier in (self.courier, self.baseline_courier, self.control_courier):
            if courier is not None:
                courier.start()
        return {"ok": True}

    def instantiate(self, request: dict[str, Any]) -> dict[str, Any]:
        loading.seed_everything(request["seed"])
        args = loading.init_inputs(self.problem, request.get("variant"))
        # The candidate's process never runs the problem: it builds ModelNew from these, as data.
        encoded = values.encode(tuple(args))
        self.model32 = loading.build_model(self.problem.Model, args, request["seed"], self.device)
        self.runners = self._runners()
        return {"ok": True, "init": encoded}

    def _runners(self) -> list[tuple[str, str]]:
        """Float64 on the device, float64 on the CPU, float32 on the device: the first that runs wins."""
        runners: list[tuple[str, str]] = []
        for runner in ((self.device, "float64"), ("cpu", "float64"), (self.device, "float32")):
            if runner not in runners:
                runners.append(runner)
        return runners

    def _run(self, model: Callable[..., object], args: list[Any], seed: int) -> object:
        loading.seed_everything(seed + 1)
        with _no_grad():
            return model(*args)

    def _reference(self, args: list[Any], seed: int) -> tuple[str, list[Any], str]:
        """The reference's output on `args`: its structure, its leaves (on the device), and how it ran."""
        last_error: Exception | None = None
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
                structure, leaves = frames.structure_of(out)
                leaves = [t.to(self.device) if isinstance(t, torch.Tensor) else t for t in leaves]
                self.runners = [(where, precision)]
                return structure, leaves, f"{precision} on {where}"
            except Exception as exc:  # noqa: BLE001  (the next precision is tried)
                last_error = exc
        assert last_error is not None  # there is always a runner to try
        raise last_error

    def _generate(self, seed: int, variant: dict[str, Any] | None) -> list[Any]:
        return inputs.generate(self.problem, seed, self.device, variant)

    # -- the proof's inputs, as data --------------------------------------------------------------

    def take_proof(self, request: dict[str, Any]) -> dict[str, Any]:
        """Read the proof process's inputs from its pipe: a spec (JSON) and raw tensor bytes."""
        kind, _, payload = frames.read_frame(self.proof_fd, request["max_bytes"])
        if kind != frames.INPUTS or len(payload) < 4:
            raise ValueError("the proof process sent no inputs frame")
        (length,) = struct.unpack_from("<I", payload)
        if length > PROOF_SPEC_BYTES:
            raise ValueError("the proof's input description is too large")
        spec = json.loads(payload[4 : 4 + length])
        raw = memoryview(payload)[4 + length :]
        proof = _decode_inputs(spec, raw, self.device)
        _of_the_problems_kind(proof, self._generate(request["seed"], None))
        self.proof_inputs = proof
        return {"ok": True, "inputs": inputs.describe(self.proof_inputs)}

    # -- one candidate call -------------------------------------------------------------------------

    def feed(self, request: dict[str, Any]) -> dict[str, Any]:
        """One call's inputs (a proof's, or fresh ones)."""
        seed = request["seed"]
        if request.get("proof"):
            assert self.proof_inputs is not None  # the parent asks for the proof's inputs after taking them
            args = [a.clone() if isinstance(a, torch.Tensor) else a for a in self.proof_inputs]
        else:
            args = self._generate(seed, request.get("variant"))
        return self._hand_out([(seed, args)], request, ends=False)

    def feed_burst(self, request: dict[str, Any]) -> dict[str, Any]:
        """The inputs of a burst's calls, one per seed, in order; the READY after the last is answered
        with END."""
        return self._hand_out([(seed, self._generate(seed, None)) for seed in request["seeds"]], request, ends=True)

    def _hand_out(self, calls: list[tuple[int, list[Any]]], request: dict[str, Any], *, ends: bool) -> dict[str, Any]:
        """Calls' inputs: kept here (a candidate's calls), their bytes handed to the courier of the
        process that makes the calls, their description to the parent."""
        baseline, control = request.get("for_baseline"), request.get("for_control")
        items: list[tuple[int, bytes]] = []
        for seed, args in calls:
            items.append((seed, frames.tensor_bytes([a for a in args if isinstance(a, torch.Tensor)])))
            if not baseline and not control:
                self.kept[seed] = {"inputs": args}
        courier = self.baseline_courier if baseline else self.control_courier if control else self.courier
        assert courier is not None  # the parent sends a process's inputs only where it has a call site
        courier.feed(items, request.get("max_output_bytes", 0), ends=ends)
        spec = [
            {"tensor": {"shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch.")}}
            if isinstance(v, torch.Tensor)
            else {"value": values.encode(v)}
            for v in calls[0][1]
        ]
        return {"ok": True, "inputs": spec}

    def compare(self, request: dict[str, Any]) -> dict[str, Any]:
        seed = request["seed"]
        kept = self.kept.pop(seed)
        assert self.courier is not None  # a candidate's calls are compared only where it has a call site
        try:
            captured = self.courier.take(seed)
        except CaptureProtocolError as exc:
            return {"ok": False, "violation": str(exc)}
        args = kept["inputs"]
        structure, reference, precision = self._reference(args, seed)
        _, fp32 = frames.structure_of(self._run(self.model32, args, seed))
        calibration = comparison.compare_leaves(fp32, reference)
        # Where the problem's own float32 output is further from float64 than any tolerance allows
        # (outputs that underflow float32, long recurrences), no float32 candidate can match float64:
        # candidates are held to the float32 output instead (`float32_reference_inexact`).
        error = calibration.get("max_rel_error")
        inexact = (
            error is not None and not math.isnan(error) and error > tolerance.CEILING and not calibration.get("reference_nan")
        )
        try:
            got_structure, leaves, raised = frames.parse_outputs(captured)
        except (frames.FrameError, ValueError, RuntimeError) as exc:
            return {"ok": False, "violation": f"the capture pipe carried an outputs frame that does not parse ({exc})"}
        result = comparison.compare_outputs(got_structure, leaves, structure, reference)
        if inexact:
            result["against_float32"] = comparison.compare_outputs(got_structure, leaves, structure, fp32)
        return {
            "ok": True,
            "comparison": result,
            "spec": _spec(fp32),
            "precision": precision,
            "float32_error": {k: calibration.get(k) for k in ("max_abs_error", "max_rel_error", "rel_l2_error", "nonfinite")},
            "output_scale": calibration.get("output_scale"),
            "reference_nan": calibration.get("reference_nan"),
        }

    def forget(self, request: dict[str, Any]) -> dict[str, Any]:
        """Drop a call that is not compared; for a forward that carries state, run it anyway, so the
        model goes through every call the candidate's did (synchronised: nothing runs on the device
        while the candidate's next call is timed)."""
        seed = request["seed"]
        kept = self.kept.pop(seed, None)
        if self.courier is not None:
            try:
                self.courier.take(seed, timeout=30)
            except CaptureProtocolError as exc:
                return {"ok": False, "violation": str(exc)}
        if request.get("advance") and kept is not None:
            self._run(self.model32, kept["inputs"], seed)
            if self.device == "cuda":
                torch.cuda.synchronize()
        return {"ok": True}

    def try_variant(self, request: dict[str, Any]) -> dict[str, Any]:
        """Whether the reference itself runs at other sizes of the problem's constants."""
        self._reference(self._generate(request["seed"], request["variant"]), request["seed"])
        return {"ok": True}

    def check_in(self, request: dict[str, Any]) -> dict[str, Any]:
        """Whether the capture pipe has carried anything out of protocol so far."""
        return {
            "ok": True,
            "violation": self.courier.violation if self.courier else None,
            "baseline_violation": self.baseline_courier.violation if self.baseline_courier else None,
        }

    # -- the problem itself -------------------------------------------------------------------------

    def inspect(self, request: dict[str, Any]) -> dict[str, Any]:
        """Degeneracy, output scale, FLOPs and bytes, from the problem alone, and the reference's own
        output facts (does it alias its inputs or its own state, does it modify its inputs)."""
        self.instantiate({"seed": request["trial_seed"]})
        first, second = request["seeds"]
        a = self._generate(first, None)
        b = self._generate(second, None)
        _, ref_a, precision = self._reference(a, first)
        _, ref_a_again, _ = self._reference(a, first)
        _, ref_b, _ = self._reference(b, second)
        fresh = self._generate(first, None)
        before = inputs.fingerprints(fresh)
        if request.get("count_flops"):
            # The counter's dispatch mode imports torch._dynamo (seconds on a CPU): only when asked.
            from torch.utils.flop_counter import FlopCounterMode

            counter = FlopCounterMode(display=False)
            with counter:
                out_a = self._run(self.model32, fresh, first)
            flops = int(counter.get_total_flops())
        else:
            out_a, flops = self._run(self.model32, fresh, first), None
        mutates = inputs.fingerprints(fresh) != before
        structure, fp32_a = frames.structure_of(out_a)
        facts = output_facts.output_facts(out_a, inputs=fresh, earlier_outputs=[], model=self.model32)
        keeps_output = output_facts.reachable_overlap(out_a, self.model32)
        # The same inputs once more, on the same model: a forward that carries state answers differently.
        state = comparison.compare_leaves(_leaves(self._run(self.model32, a, first)), fp32_a)
        rounding = comparison.compare_leaves(fp32_a, ref_a)
        repeat = comparison.compare_leaves(ref_a_again, ref_a)
        across = comparison.compare_leaves(ref_b, ref_a)
        noise = rounding["max_abs_error"] or 0.0
        variation = across["max_abs_error"]
        constant = all(
            isinstance(t, torch.Tensor) and t.numel() > 0 and bool((t == t.reshape(-1)[0]).all().item()) for t in ref_a + ref_b
        )
        independent = variation is not None and variation <= max(4 * noise, 0.0)
        parameters = list(self.model32.parameters()) + list(self.model32.buffers())
        reasons: list[str] = []
        if constant:
            reasons.append("every element of the output has the same value on every input")
        elif independent:
            reasons.append(
                f"the output does not depend on the inputs: two input sets give outputs {variation:.3g} "
                f"apart, within float32 rounding ({noise:.3g})"
            )
        output_bytes = _bytes_of(fp32_a)
        return {
            "ok": True,
            "degenerate": bool(constant or independent),
            "reason": "; ".join(reasons),
            "constant_output": bool(constant),
            "independent_of_inputs": bool(independent),
            "nondeterministic": bool((repeat["max_rel_error"] or 0.0) > 1e-9),
            "carries_state": bool((state["max_rel_error"] or 0.0) > STATE_CHANGE),
            "output_scale": rounding["output_scale"],
            "float32_error": {k: rounding[k] for k in ("max_abs_error", "max_rel_error", "rel_l2_error")},
            "reference_precision": precision,
            "reference_nan": rounding["reference_nan"],
            "spec": _spec(fp32_a),
            "output_facts": facts["leaves"],
            "structure": structure,
            "reference_mutates_inputs": mutates,
            "reference_keeps_output": keeps_output,
            "inputs": inputs.describe(a),
            "flops": flops,
            "bytes": _bytes_of(a) + output_bytes + _bytes_of(parameters),
            "input_bytes": _bytes_of(a),
            "output_bytes": output_bytes,
            "parameter_bytes": _bytes_of(parameters),
        }

    def finish(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "violation": self.courier.violation if self.courier else None}


# A proof's floating values may reach this many times the largest of the problem's own inputs.
PROOF_MAGNITUDE = 1000.0


def _of_the_problems_kind(proof: list[Any], own: list[Any]) -> None:
    """A proof shows a kernel wrong on inputs the problem could give it: the same number of inputs,
    each tensor of the problem's dtype and shape, finite, and of a magnitude within PROOF_MAGNITUDE of
    the problem's own. Values far outside them (1e8 - 1e8 + 1) test float32's rounding, not the kernel,
    and a larger size would only test the kernel at sizes the problem does not ask for."""
    if len(proof) != len(own):
        raise ValueError(f"the proof gives {len(proof)} inputs where the problem's get_inputs() gives {len(own)}")
    for index, (given, expected) in enumerate(zip(proof, own)):
        if isinstance(expected, torch.Tensor):
            if not isinstance(given, torch.Tensor) or given.dtype != expected.dtype or given.shape != expected.shape:
                raise ValueError(
                    f"the proof's input {index} must be a {str(expected.dtype).removeprefix('torch.')} tensor "
                    f"of shape {list(expected.shape)}, as the problem's is"
                )
            if given.is_floating_point() and given.numel():
                if not bool(torch.isfinite(given).all()):
                    raise ValueError(f"the proof's input {index} holds NaN or infinity")
                bound = PROOF_MAGNITUDE * max(1.0, float(expected.abs().max())) if expected.numel() else PROOF_MAGNITUDE
                if float(given.abs().max()) > bound:
                    raise ValueError(
                        f"the proof's input {index} reaches {float(given.abs().max()):.3g}, beyond "
                        f"{PROOF_MAGNITUDE:g} times the problem's own inputs ({bound:.3g})"
                    )
        elif type(given) is not type(expected):
            raise ValueError(f"the proof's input {index} must be a {type(expected).__name__}, as the problem's is")


def _decode_inputs(spec: list[Any], raw: memoryview, device: str) -> list[Any]:
    """Inputs from their description and bytes, checking every size against what arrived."""
    if not isinstance(spec, list) or len(spec) > 256:
        raise ValueError("the proof's inputs must be a list of at most 256 values")
    args: list[Any] = []
    offset = 0
    for entry in spec:
        if "tensor" in entry:
            dtype = getattr(torch, str(entry["tensor"]["dtype"]), None)
            shape = entry["tensor"]["shape"]
            if not isinstance(dtype, torch.dtype) or not all(type(n) is int and n >= 0 for n in shape):
                raise ValueError("a proof input tensor with an unknown dtype or a bad shape")
            numel = math.prod(shape)
            nbytes = numel * torch.empty(0, dtype=dtype).element_size()
            if offset + nbytes > len(raw):
                raise ValueError("the proof's inputs are shorter than their description")
            if nbytes:
                chunk = torch.frombuffer(bytearray(raw[offset : offset + nbytes]), dtype=torch.uint8)
                args.append(chunk.view(dtype).reshape(shape).to(device))
            else:
                args.append(torch.empty(shape, dtype=dtype, device=device))
            offset += nbytes
        else:
            args.append(values.decode(entry["value"], device))
    if offset != len(raw):
        raise ValueError("the proof's inputs are longer than their description")
    return args


_HANDLERS = {
    "prepare": ReferenceProcess.prepare,
    "instantiate": ReferenceProcess.instantiate,
    "take_proof": ReferenceProcess.take_proof,
    "feed": ReferenceProcess.feed,
    "feed_burst": ReferenceProcess.feed_burst,
    "compare": ReferenceProcess.compare,
    "forget": ReferenceProcess.forget,
    "check_in": ReferenceProcess.check_in,
    "try_variant": ReferenceProcess.try_variant,
    "inspect": ReferenceProcess.inspect,
    "finish": ReferenceProcess.finish,
}


def main(
    read_fd: int,
    write_fd: int,
    capture_fd: int = -1,
    input_fd: int = -1,
    proof_fd: int = -1,
    baseline_ready_fd: int = -1,
    baseline_input_fd: int = -1,
    control_capture_fd: int = -1,
    control_input_fd: int = -1,
) -> None:
    serve(
        Channel(read_fd, write_fd),
        _HANDLERS,
        ReferenceProcess(
            capture_fd, input_fd, proof_fd, baseline_ready_fd, baseline_input_fd, control_capture_fd, control_input_fd
        ),
    )
