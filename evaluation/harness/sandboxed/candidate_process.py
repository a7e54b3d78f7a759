"""The candidate process: the only place candidate code runs, and where it is timed.

It holds the candidate and the harness's own code, nothing else: not the problem (its init inputs
and each call's inputs arrive as data from the reference process), not the baselines (timed in the
baseline process), not the reference (in the reference process). It answers the parent's requests
one at a time (describe, prepare, load, instantiate, call, finish) and reports facts: output facts,
global-state changes, patched functions, new threads and processes, and whether an output's bytes
changed after it was captured.

Each call goes through the call site (callsite.c): the inputs' bytes arrive, the call is made and
timed, and what it returned is captured and sent to the reference process, with no other Python
code of this process running in between. The times go from the call site to the parent directly;
what this process's Python code replies about a call is facts, never its time.

Order matters: the call site, the clocks and the snapshots of global state and namespaces are all
in place before the candidate's source is executed.
"""

import os
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from evaluation.harness.channel import Channel
from evaluation.harness.sandboxed import baselines, environment, integrity, loading, output_facts, profiling, timing, values
from evaluation.harness.sandboxed.request_loop import error_facts, serve
from evaluation.harness.sandboxed.timing import settle

_no_grad = torch.no_grad
_Tensor = torch.Tensor

SNAPSHOT_EVERY = 8
_urandom = os.urandom


class CandidateProcess:
    def __init__(self, channel: Channel, timing_fd: int, capture_fd: int, input_fd: int, key_fd: int):
        self.channel = channel
        self.fds: timing.CallSiteFds = {"timing_fd": timing_fd, "capture_fd": capture_fd, "input_fd": input_fd, "key_fd": key_fd}
        self.candidate_model: torch.nn.Module | None = None  # the ModelNew instance built last, where one was
        self.candidate_module: types.ModuleType | None = None
        self.candidate_state: integrity.GlobalState | None = None  # its global state, kept for its own calls
        # The last call's outputs (the call site also holds them until it has poisoned their memory).
        self.last_outputs: list[torch.Tensor] = []
        # Every earlier output of the instance, as (memory span, weak reference to its storage): one
        # that something still holds may not come back as a later output. Weak, so that outputs the
        # candidate let go of free their memory as they would outside the harness (holding them all
        # made every timed call allocate new memory).
        self.earlier: list[tuple[output_facts.Span, StorageWeakRef]] = []
        # A `graph` call's arguments and input slots, kept for its capture.
        self.replay_inputs: tuple[list[Any], tuple[torch.Tensor, ...]] | None = None

    # -- requests -------------------------------------------------------------------------------

    def describe(self, request: dict[str, Any]) -> dict[str, Any]:
        self.device = request["device"]
        if self.device == "cuda":
            torch.cuda.init()
        return {"ok": True, "env": environment.describe(self.device, driver=False)}

    def prepare(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.device == "cuda":
            torch.cuda.set_per_process_memory_fraction(request["gpu_memory_fraction"])
            torch.zeros(1, device="cuda")  # the context current on this thread, for the call site
        self.spec = request["spec"]
        self.flush_bytes = timing.start(
            self.device,
            flush_bytes=request.get("flush_bytes"),
            max_output_bytes=request["max_output_bytes"],
            poison_outputs=request["poison_outputs"],
            every_call_captured=True,
            **self.fds,
        )
        if request.get("prime_compiler"):
            integrity.prime_compiler()
        integrity.quiet_library_threads()
        integrity.refuse_audit_hooks()
        # Everything the harness relies on is now loaded: take the snapshots the candidate is held to.
        self.original_state = integrity.GlobalState.capture()
        self.snapshot = integrity.NamespaceSnapshot(integrity.watched_namespaces())
        self.harness_threads = integrity.thread_ids()
        self.harness_children = integrity.child_pids()
        return {"ok": True, "flush_bytes": self.flush_bytes}

    def load(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            with open(request["candidate_path"]) as handle:
                source = handle.read()
            self.candidate_module = loading.load_module(loading.CANDIDATE_MODULE, source, request["candidate_path"])
            # Nothing of the candidate's may still run on the GPU once a step is answered: the parent
            # freezes this process at the reply, and measures the baselines and the reference meanwhile.
            settle(self.device)
        except BaseException as exc:  # noqa: BLE001  (whatever user code raised is the candidate's reply)
            return {"ok": False, "error": error_facts(exc), **self.integrity_facts()}
        self.candidate_state = integrity.GlobalState.capture()
        self.original_state.apply()
        defines = isinstance(getattr(self.candidate_module, "ModelNew", None), type)
        return {"ok": True, "defines_model_new": defines, **self.integrity_facts()}

    def instantiate(self, request: dict[str, Any]) -> dict[str, Any]:
        self.candidate_model = None
        self.last_outputs, self.earlier = [], []
        try:
            args = values.decode(request["init"], self.device)
            assert self.candidate_state is not None and self.candidate_module is not None  # instantiated once loaded
            self.candidate_state.apply()
            self.candidate_model = loading.build_model(self.candidate_module.ModelNew, list(args), request["seed"], self.device)
            settle(self.device)
        except BaseException as exc:  # noqa: BLE001  (whatever user code raised is the candidate's reply)
            return {"ok": False, "error": error_facts(exc), **self.after_candidate()}
        return {"ok": True, **self.after_candidate()}

    def _before_calls(self, request: dict[str, Any]) -> tuple[list[Any], tuple[torch.Tensor, ...]]:
        """The harness's input slots (filled inside the call site's window), the allocator's free memory
        poisoned, and the candidate's own global state and seed in place."""
        self.original_state.apply()
        args, slots = values.input_slots(request["inputs"], self.device)
        output_facts.poison(self.spec, self.device)
        assert self.candidate_state is not None  # calls follow the candidate's loading
        self.candidate_state.apply()
        loading.seed_everything(request["seed"] + 1)
        return args, slots

    def _output(self, result: object, args: list[Any]) -> dict[str, Any]:
        """The facts of one call's output, which then joins the instance's earlier outputs."""
        self.earlier = [(span, ref) for span, ref in self.earlier if not ref.expired()]
        facts = output_facts.output_facts(
            result,
            inputs=args,
            earlier_outputs=self.last_outputs,
            model=self.candidate_model,
            held_spans=[span for span, _ in self.earlier],
        )
        _, leaves = output_facts.flatten(result)
        self._keep([x for x in leaves if type(x) is _Tensor])
        return facts

    def call(self, request: dict[str, Any], keep_inputs: bool = False) -> dict[str, Any]:
        """One call of the candidate on inputs that arrive inside the call site's window. `keep_inputs`
        (for `graph`): the call's arguments and input slots stay in `replay_inputs`."""
        args, slots = self._before_calls(request)
        reply: dict[str, Any] = {"ok": True}
        model = self.candidate_model
        assert model is not None  # the parent calls only an instance it was told was built
        with _no_grad():
            if request.get("profile"):
                launched, done = profiling.kernels_of(
                    lambda: timing.call(model, args, slots, capture=True),  # noqa: F821  (called at once, before the del)
                    self.device,
                )
                reply.update(launched)
            else:
                done = timing.call(model, args, slots, capture=True)
        result, error = done["result"], done["error"]
        del done
        facts = self.after_candidate(sampled=True)
        if error is not None:
            return {**reply, "ok": False, "error": error_facts(error), **facts}
        reply["output"] = self._output(result, args)
        reply["inputs"] = [
            {"shape": list(a.shape), "dtype": str(a.dtype).removeprefix("torch.")}
            if type(a) is _Tensor
            else {"value": repr(a)[:80]}
            for a in args
        ]
        self.replay_inputs = (args, slots) if keep_inputs else None
        del result, args, slots
        # Last, after every other step of the harness has run and the call's inputs are gone: an
        # output finished by code the candidate left behind has changed since it was captured.
        reply["changed_after_capture"] = timing.recheck()
        reply.update(facts)
        return reply

    def burst(self, request: dict[str, Any]) -> dict[str, Any]:
        """Calls back to back on inputs that arrive one call at a time inside the call site's window,
        each captured as it completes (callsite.c, burst); the facts of each call's output. `graph`:
        replays of the captured call (see `graph`), whose output is the graph's own memory each time,
        so only its bytes are facts."""
        fn: Callable[..., object] | None
        args: list[Any]
        if request.get("graph"):
            assert self.candidate_state is not None  # replays follow the candidate's loading
            self.candidate_state.apply()
            fn, args, slots = self.replay, [], self.replay_slots
        else:
            args, slots = self._before_calls(request)
            fn = self.candidate_model
        assert fn is not None  # the parent asks for calls of a built instance, replays of a captured one
        with _no_grad():
            done = timing.burst(fn, args, slots, capture=True, gate=request.get("gate", True))
        results, error = done["results"], done["error"]
        del done
        facts = self.after_candidate(sampled=True)
        calls: list[dict[str, Any]] = [
            {} if request.get("graph") else {"output": self._output(result, args)} for result in results
        ]
        del results, args, slots
        reply: dict[str, Any] = {"ok": error is None, "calls": calls, **facts}
        if error is not None:
            reply["error"] = error_facts(error)
        return reply

    def graph(self, request: dict[str, Any]) -> dict[str, Any]:
        """The candidate's call captured in a CUDA graph on the harness's input slots, for its device
        time. One call through the call site fills the slots (captured, timed and compared like any
        other); the warm-up calls and the capture then run on those inputs. Where capture fails, the
        reply says why and the device time is not measured: no fault of the candidate's."""
        reply = self.call(request, keep_inputs=True)
        if not reply["ok"]:
            return reply
        assert self.replay_inputs is not None  # kept by the call just made, which succeeded
        args, self.replay_slots = self.replay_inputs
        self.replay_inputs = None
        # What the call returned, before anything else runs on these inputs: the graph must give it back.
        expected = [x.clone() for x in self.last_outputs]
        assert self.candidate_state is not None and self.candidate_model is not None  # as `call` found them
        self.candidate_state.apply()
        with _no_grad():
            self.replay, reply["graph"] = baselines.try_replay(self.candidate_model, args, expected)
        del expected
        del args
        reply.update(self.after_candidate(sampled=True))
        return reply

    def finish(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, **self.integrity_facts()}

    # -- helpers --------------------------------------------------------------------------------

    def _keep(self, tensors: list[torch.Tensor]) -> None:
        for tensor in self.last_outputs:
            try:
                self.earlier.append((output_facts.span_of(tensor), StorageWeakRef(tensor.untyped_storage())))
            except RuntimeError:  # an output torch.compile's CUDA graphs overwrote: already reported
                continue
        self.last_outputs = tensors

    # -- facts ----------------------------------------------------------------------------------

    def after_candidate(self, sampled: bool = False) -> dict[str, Any]:
        """Read the state the candidate left, keep it for its own calls, restore the original."""
        self.candidate_state = integrity.GlobalState.capture()
        self.original_state.apply()
        return self.integrity_facts(sampled)

    def integrity_facts(self, sampled: bool = False) -> dict[str, Any]:
        """After a call (`sampled`), the namespace snapshot (thousands of identities, 3 ms a call on
        an H100 host) is compared for one call in SNAPSHOT_EVERY, drawn from the OS after the call
        has returned, so the candidate cannot know which; after loading, every instantiation and at
        the finish, always."""
        threads = integrity.busy_threads(self.harness_threads)
        names = {t.ident: t.name for t in threading.enumerate()}
        state = self.candidate_state or integrity.GlobalState.capture()
        compare_snapshot = not sampled or _urandom(1)[0] < 256 // SNAPSHOT_EVERY
        return {
            "state_changes": state.changes_from(self.original_state),
            "patched": self.snapshot.changed() if compare_snapshot else [],
            "snapshot_compared": compare_snapshot,
            "new_threads": [names.get(t, f"thread {t}") for t in threads],
            "new_processes": sorted(integrity.child_pids() - self.harness_children),
        }


_HANDLERS = {
    "describe": CandidateProcess.describe,
    "prepare": CandidateProcess.prepare,
    "load": CandidateProcess.load,
    "instantiate": CandidateProcess.instantiate,
    "call": CandidateProcess.call,
    "burst": CandidateProcess.burst,
    "graph": CandidateProcess.graph,
    "finish": CandidateProcess.finish,
}


def main(read_fd: int, write_fd: int, timing_fd: int, capture_fd: int, input_fd: int, key_fd: int) -> None:
    channel = Channel(read_fd, write_fd)
    serve(channel, _HANDLERS, CandidateProcess(channel, timing_fd, capture_fd, input_fd, key_fd))
    sys.stdout.flush()
    sys.stderr.flush()
