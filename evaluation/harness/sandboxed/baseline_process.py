"""The baseline process: the problem's reference timed as eager, torch.compile and a CUDA graph, in a
process that never loads candidate code.

A candidate that shares a process with its baselines can make them slower (a dispatcher kernel
that is slow unless its own forward runs, a lowered scheduler priority, a gc hook): here it
cannot reach them. Calls interleave with the candidate's across the two processes, in the
shuffled rounds the parent runs, each timed through the same call site (callsite.c). The device's
ceilings (for the speed-of-light floor) are measured here too, before the problem is loaded, so no
user code has run in the process that measures them.
"""

import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from evaluation.harness.channel import Channel
from evaluation.harness.sandboxed import baselines, device_rates, environment, frames, inputs, loading, profiling, timing, values
from evaluation.harness.sandboxed.request_loop import serve

_no_grad = torch.no_grad
WARM_CALLS = 3


class BaselineProcess:
    def __init__(self, timing_fd: int, ready_fd: int, input_fd: int, key_fd: int):
        self.fds: timing.CallSiteFds = {"timing_fd": timing_fd, "capture_fd": ready_fd, "input_fd": input_fd, "key_fd": key_fd}
        self.calls: dict[str, Callable[..., object]] = {}  # each baseline's callable, by name
        self.replays: dict[str, baselines.Replay | None] = {}  # its call captured in a CUDA graph, where it could be
        self.replay_slots: dict[str, tuple[torch.Tensor, ...]] = {}  # the input slots that graph reads

    def describe(self, request: dict[str, Any]) -> dict[str, Any]:
        self.device = request["device"]
        if self.device == "cuda":
            torch.cuda.init()
            torch.zeros(1, device="cuda")  # the context current on this thread, for the call site
        self.flush_bytes = timing.start(self.device, flush_bytes=request.get("flush_bytes"), **self.fds)
        return {
            "ok": True,
            "env": environment.describe(self.device),
            "flush_bytes": self.flush_bytes,
            "timer_method": timing.method(self.device, self.flush_bytes),
        }

    def rates(self, request: dict[str, Any]) -> dict[str, Any]:
        """The device's copy bandwidth and matrix rate, before any user code has loaded here."""
        return {"ok": True, "rates": device_rates.measure(self.device)}

    def prepare(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.device == "cuda":
            torch.cuda.set_per_process_memory_fraction(request["gpu_memory_fraction"])
        self.problem, _ = loading.load_problem(request["problem_path"], None)
        seed = request["setup_seed"]
        self.model = loading.build_model(self.problem.Model, loading.init_inputs(self.problem), seed, self.device)
        example = inputs.generate(self.problem, seed + 1, self.device, None)
        statuses: dict[str, str] = {}
        build_s: dict[str, float] = {}
        for name in request["baselines"]:
            reason = baselines.unavailable_reason(name, self.device)
            began = time.monotonic()
            if reason is None:
                try:
                    with _no_grad():
                        call = baselines.build(name, self.model, example, self.device)
                        for _ in range(3):
                            call(*example)
                    self.calls[name] = call
                    statuses[name] = "ready"
                    build_s[name] = round(time.monotonic() - began, 3)  # compiling and warming it: the verdict's cost
                    continue
                except Exception as exc:  # noqa: BLE001  (a baseline that cannot be built is reported, not fatal)
                    reason = f"could not be built: {type(exc).__name__}: {str(exc)[:300]}"
            statuses[name] = reason
        warm = 0
        if "eager" in self.calls:
            # The reference's own time (the call site writes it to the parent), which a candidate
            # call's limit is scaled to (pipeline).
            for _ in range(WARM_CALLS):
                with _no_grad():
                    timing.call(self.calls["eager"], example, None, capture=False)
            warm = WARM_CALLS
        return {"ok": True, "baselines": statuses, "warm_calls": warm, "build_s": build_s}

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """One timed call of a baseline, its inputs arriving from the reference process inside the call
        site's window exactly as the candidate's do, so both sides' calls start from the same state."""
        args, slots = values.input_slots(request["inputs"], self.device)
        loading.seed_everything(request["seed"] + 1)
        reply: dict[str, Any] = {"ok": True}
        with _no_grad():
            fn = self.calls[request["who"]]
            if request.get("profile"):
                launched, done = profiling.kernels_of(lambda: timing.call(fn, args, slots, capture=False), self.device)
                reply.update(launched)
            else:
                done = timing.call(fn, args, slots, capture=False)
        if done["error"] is not None:
            raise done["error"]
        return reply

    def burst(self, request: dict[str, Any]) -> dict[str, Any]:
        """A baseline's calls back to back, exactly as the candidate's burst is made (callsite.c, burst);
        `graph`: replays of its captured call (see `graph`)."""
        fn: Callable[..., object] | None
        args: list[Any]
        if request.get("graph"):
            fn, (args, slots) = self.replays[request["who"]], ([], self.replay_slots[request["who"]])
            assert fn is not None  # the parent asks for replays only of calls it was told were captured
        else:
            fn, (args, slots) = self.calls[request["who"]], values.input_slots(request["inputs"], self.device)
        loading.seed_everything(request["seed"] + 1)
        with _no_grad():
            done = timing.burst(fn, args, slots, capture=False, gate=request.get("gate", True))
        if done["error"] is not None:
            raise done["error"]
        return {"ok": True, "count": done["count"]}

    def graph(self, request: dict[str, Any]) -> dict[str, Any]:
        """A baseline's call captured in a CUDA graph on its input slots (its device time), once one
        call through the call site has filled them, as the candidate's is (candidate_process.graph)."""
        who = request["who"]
        args, slots = values.input_slots(request["inputs"], self.device)
        loading.seed_everything(request["seed"] + 1)
        with _no_grad():
            done = timing.call(self.calls[who], args, slots, capture=False)
        if done["error"] is not None:
            raise done["error"]
        _, leaves = frames.structure_of(done["result"])
        expected = [x.clone() for x in leaves if type(x) is torch.Tensor]
        del done, leaves
        with _no_grad():
            self.replays[who], state = baselines.try_replay(self.calls[who], args, expected)
        self.replay_slots[who] = slots
        return {"ok": True, "graph": state}

    def finish(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True}


_HANDLERS = {
    "describe": BaselineProcess.describe,
    "rates": BaselineProcess.rates,
    "prepare": BaselineProcess.prepare,
    "call": BaselineProcess.call,
    "burst": BaselineProcess.burst,
    "graph": BaselineProcess.graph,
    "finish": BaselineProcess.finish,
}


def main(read_fd: int, write_fd: int, timing_fd: int, ready_fd: int, input_fd: int, key_fd: int) -> None:
    serve(Channel(read_fd, write_fd), _HANDLERS, BaselineProcess(timing_fd, ready_fd, input_fd, key_fd))
    sys.stdout.flush()
