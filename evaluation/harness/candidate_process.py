"""The candidate process: the only place candidate code runs, and where it is timed.

It answers the parent's requests one at a time (prepare, load, instantiate, call, dump, finish)
and reports facts: times, output facts, input fingerprints before and after, global-state
changes, patched functions, new threads and processes. It never sees a reference output (those
live in the reference process) and never decides anything: the parent judges the facts.

Order matters: the problem, the baselines (compiled and captured), the clocks and the snapshots
of global state and namespaces are all in place before the candidate's source is executed.
"""

import os
import sys
import threading

import torch

from evaluation.harness import baselines, device_rates, environment, inputs, integrity, loading, output_facts, profiling
from evaluation.harness.channel import Channel
from evaluation.harness.service import error_facts, serve
from evaluation.harness.timing import Timer, settle

_no_grad = torch.no_grad
_Tensor = torch.Tensor

# How many earlier outputs are held (and so may not be returned again).
KEPT_OUTPUT_CALLS = 2
SNAPSHOT_EVERY = 8
_urandom = os.urandom


class CandidateProcess:
    def __init__(self, channel: Channel):
        self.channel = channel
        self.candidate_model = None
        self.candidate_module = None
        self.candidate_state = None
        self.kept_outputs: list[list] = []
        self.last_leaves: list = []
        self.baseline_calls: dict = {}

    # -- requests -------------------------------------------------------------------------------

    def describe(self, request: dict) -> dict:
        self.device = request["device"]
        if self.device == "cuda":
            torch.cuda.init()
        return {"ok": True, "env": environment.describe(self.device)}

    def prepare(self, request: dict) -> dict:
        if self.device == "cuda":
            torch.cuda.set_per_process_memory_fraction(request["gpu_memory_fraction"])
        self.problem, self.proof = loading.load_problem(request["problem_path"], request.get("proof_path"))
        seed = request["setup_seed"]
        self.reference_model = loading.build_model(self.problem.Model, loading.init_inputs(self.problem), seed, self.device)
        example = inputs.generate(self.problem, seed + 1, self.device, None)
        before = inputs.fingerprints(example)
        with _no_grad():
            out = self.reference_model(*example)
        mutates = inputs.fingerprints(example) != before
        facts = output_facts.output_facts(out, inputs=example, earlier_outputs=[], model=self.reference_model)
        self.spec = facts["leaves"]
        del out
        statuses = {}
        for name in request["baselines"]:
            reason = baselines.unavailable_reason(name, self.device)
            if reason is None:
                try:
                    with _no_grad():
                        call = baselines.build(name, self.reference_model, example, self.device)
                        for _ in range(3):
                            call(*example)
                    self.baseline_calls[name] = call
                    statuses[name] = "ready"
                    continue
                except Exception as exc:
                    reason = f"could not be built: {type(exc).__name__}: {str(exc)[:300]}"
            statuses[name] = reason
        self.timer = Timer(self.device, request.get("flush_bytes"))
        rates = device_rates.measure(self.device) if request.get("measure_rates") else None
        if request.get("prime_compiler"):
            integrity.prime_compiler()
        integrity.quiet_library_threads()
        # Everything the harness relies on is now loaded: take the snapshots the candidate is held to.
        self.original_state = integrity.GlobalState.capture()
        self.snapshot = integrity.NamespaceSnapshot(integrity.watched_namespaces(
            [("problem", self.problem), ("problem.Model", self.problem.Model)]))
        self.problem_globals = dict(vars(self.problem))
        self.harness_threads = integrity.thread_ids()
        self.harness_children = integrity.child_pids()
        return {"ok": True, "spec": self.spec, "reference_structure": facts["structure"], "baselines": statuses,
                "reference_mutates_inputs": mutates, "rates": rates, "timer_method": self.timer.method, "flush_bytes": self.timer.flush_bytes}

    def load(self, request: dict) -> dict:
        try:
            with open(request["candidate_path"]) as handle:
                source = handle.read()
            self.candidate_module = loading.load_module(loading.CANDIDATE_MODULE, source, "candidate.py")
            # Nothing of the candidate's may still run on the GPU once a step is answered: between
            # steps another verification sharing the device may be measuring (pipeline.DeviceLock).
            settle(self.device)
        except BaseException as exc:
            return {"ok": False, "error": error_facts(exc), **self.integrity_facts()}
        self.candidate_state = integrity.GlobalState.capture()
        self.original_state.apply()
        defines = isinstance(getattr(self.candidate_module, "ModelNew", None), type)
        return {"ok": True, "defines_model_new": defines, **self.integrity_facts()}

    def instantiate(self, request: dict) -> dict:
        self.candidate_model = None
        self.kept_outputs = []
        self.last_leaves = []
        try:
            args = loading.init_inputs(self.problem, request.get("variant"))
            self.candidate_state.apply()
            self.candidate_model = loading.build_model(self.candidate_module.ModelNew, args, request["seed"], self.device)
            settle(self.device)
        except BaseException as exc:
            return {"ok": False, "error": error_facts(exc), **self.after_candidate()}
        return {"ok": True, **self.after_candidate()}

    def call(self, request: dict) -> dict:
        """One call of the candidate or a baseline. Both sides go through every step (poison,
        state, facts, snapshots), so the parent's clock sees the same bookkeeping around each."""
        who = request["who"]
        candidate = who == "candidate"
        source = self.proof if request.get("proof") else self.problem
        self.original_state.apply()
        args = inputs.generate(source, request["seed"], self.device, request.get("variant"), self.problem)
        before = inputs.fingerprints(args)
        model = self.candidate_model if candidate else self.reference_model
        fn = model if candidate else self.baseline_calls[who]
        output_facts.poison(self.spec, self.device)
        (self.candidate_state if candidate else self.original_state).apply()
        loading.seed_everything(request["seed"] + 1)
        reply = {"ok": True}
        try:
            with _no_grad():
                if request.get("profile"):
                    kernels, result = profiling.kernels_of(fn, args, self.device)
                    reply["kernels"] = kernels
                    ms = stream_ms = host_ms = None
                else:
                    result, ms, stream_ms, host_ms = self.timer.time(fn, args)
        except BaseException as exc:
            reply.update(ok=False, error=error_facts(exc))
            result, ms, stream_ms, host_ms = None, None, None, None
        facts = self.after_candidate(sampled=True) if candidate else self.after_baseline(sampled=True)
        if not reply["ok"]:
            return {**reply, **facts} if candidate else reply
        # A graphed baseline's outputs are overwritten by its next replay: only the candidate's are kept.
        earlier = [leaf for leaves in self.kept_outputs for leaf in leaves] if candidate else []
        output = output_facts.output_facts(result, inputs=args, earlier_outputs=earlier, model=model)
        _, leaves = output_facts.flatten(result)
        if candidate:
            self.kept_outputs = (self.kept_outputs + [[x for x in leaves if type(x) is _Tensor]])[-KEPT_OUTPUT_CALLS:]
        reply.update(ms=ms, stream_ms=stream_ms, host_ms=host_ms, inputs_before=before, inputs_after=inputs.fingerprints(args), inputs=inputs.describe(args))
        if candidate:
            reply.update(output=output, **facts)
            self.last_leaves = leaves
        del result
        return reply

    def dump(self, request: dict) -> dict:
        return {"ok": True, "files": output_facts.dump(self.last_leaves, request["path_prefix"])}

    def finish(self, request: dict) -> dict:
        return {"ok": True, **self.integrity_facts()}

    # -- facts ----------------------------------------------------------------------------------

    def after_candidate(self, sampled: bool = False) -> dict:
        """Read the state the candidate left, keep it for its own calls, restore the original."""
        self.candidate_state = integrity.GlobalState.capture()
        self.original_state.apply()
        return self.integrity_facts(sampled)

    def after_baseline(self, sampled: bool = False) -> dict:
        """The same work as after a candidate call; threads and processes a baseline starts
        (torch.compile's workers) are the harness's own."""
        integrity.GlobalState.capture()
        self.original_state.apply()
        facts = self.integrity_facts(sampled)
        self.harness_threads |= integrity.thread_ids()
        self.harness_children |= integrity.child_pids()
        return facts

    def integrity_facts(self, sampled: bool = False) -> dict:
        """After a call (`sampled`), the namespace snapshot (thousands of identities, 3 ms a call on
        an H100 host) is compared for one call in SNAPSHOT_EVERY, drawn from the OS after the call
        has returned, so the candidate cannot know which; after loading, every instantiation and at
        the finish, always. A replaced function stays replaced, or is replaced again after each of
        the candidate's calls to reach the harness's code between them: either way it is found."""
        threads = integrity.busy_threads(self.harness_threads)
        names = {t.ident: t.name for t in threading.enumerate()}
        state = self.candidate_state or integrity.GlobalState.capture()
        compare_snapshot = not sampled or _urandom(1)[0] < 256 // SNAPSHOT_EVERY
        return {
            "state_changes": state.changes_from(self.original_state),
            "patched": self.snapshot.changed() if compare_snapshot else [],
            "snapshot_compared": compare_snapshot,
            "problem_changed": sorted(k for k, v in vars(self.problem).items() if self.problem_globals.get(k, _GONE) is not v)
            + sorted(k for k in self.problem_globals if k not in vars(self.problem)),
            "new_threads": [names.get(t, f"thread {t}") for t in threads],
            "new_processes": sorted(integrity.child_pids() - self.harness_children),
        }


_GONE = object()

_HANDLERS = {
    "describe": CandidateProcess.describe,
    "prepare": CandidateProcess.prepare,
    "load": CandidateProcess.load,
    "instantiate": CandidateProcess.instantiate,
    "call": CandidateProcess.call,
    "dump": CandidateProcess.dump,
    "finish": CandidateProcess.finish,
}


def main(read_fd: int, write_fd: int) -> None:
    channel = Channel(read_fd, write_fd)
    serve(channel, _HANDLERS, CandidateProcess(channel))
    sys.stdout.flush()
    sys.stderr.flush()
