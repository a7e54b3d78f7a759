"""One verification, as a short pipeline of named steps run by the parent process:

    start      both sandboxed processes: the reference process and the candidate process
    prepare    at once, the reference process runs the problem alone (degeneracy, scale, FLOPs and
               bytes) and the candidate process loads the problem, builds and warms the baselines,
               takes its clocks and snapshots; then, and only then,
    load       it executes the candidate's source
    check      trials: a fresh ModelNew per secret weight seed, fresh inputs per call, every
               output compared in the reference process against float64
    proof      a hack reporter's inputs, when given
    time       shuffled rounds of candidate and baseline calls on fresh inputs; a secret subset of
               the timed calls is compared in full too
    profile    the kernels one call of each side launched
    shapes     one more check at other sizes of the problem's constants
    score      the checks in checks.py turn the evidence into a verdict (scoring.py)

The parent never runs problem or candidate code and never parses what they print. It draws every
seed from a secret source, just in time, and keeps the timing samples itself.
"""

import contextlib
import fcntl
import random
import secrets
import shutil
import tempfile
import time
from hashlib import sha256
from pathlib import Path

from evaluation.harness import baseline_cache, checks, measurement, problem_shapes, scoring, static_analysis
from evaluation.harness.evidence import (CANDIDATE, PROFILE, PROOF, REFERENCE, TIMED, TRIAL, VARIANT, WARMUP, Call,
                                         Evidence, Fault)
from evaluation.harness.limits import Limits, Plan, coerce
from evaluation.harness.sandbox import ProcessFault, SandboxedProcess
from evaluation.harness.verdict import BASELINES, Verdict

DEVICES = ("cpu", "cuda")
# What a reply must hold to be a reply at all; anything else came from somewhere else.
REQUIRED = {(CANDIDATE, "describe"): ("env",), (CANDIDATE, "prepare"): ("spec", "baselines"), (CANDIDATE, "load"): ("ok",),
            (CANDIDATE, "instantiate"): ("ok",), (CANDIDATE, "dump"): ("files",), (REFERENCE, "inspect"): ("spec", "flops"),
            (REFERENCE, "reference"): ("inputs", "spec"), (REFERENCE, "compare"): ("comparison",)}
REQUIRED_AFTER_CALL = ("ms", "inputs_before", "inputs_after")
STAGES = ("building", "checking", "timing", "done")
CHECK_EVERY = 16


class DeviceLock:
    """A readers-writer lock on a file (flock), shared by the verifications of one GPU.

    Work that only needs the GPU to be right (inspecting, building, checking) holds it shared, so
    several verifications overlap it; measurements hold it exclusive, so nothing else runs on the
    device while a sample is taken. A second file is a turnstile: a verification waiting for the
    exclusive lock holds it, so new shared holders queue behind that wait instead of starving it.
    Nobody waits for one lock while holding the other, so it cannot deadlock. With no path the
    lock does nothing (one verification per device, as a worker runs them)."""

    def __init__(self, path: str | None):
        self.path = path
        self.mode = None
        self.waited_s = 0.0
        self._main = self._turnstile = None

    def __enter__(self):
        if self.path:
            self._main = open(self.path, "a")
            self._turnstile = open(self.path + ".turnstile", "a")
            self._take(fcntl.LOCK_SH)
        return self

    def __exit__(self, *exc):
        if self._main is not None:
            fcntl.flock(self._main, fcntl.LOCK_UN)
            self._main.close()
            self._turnstile.close()
            self._main = self._turnstile = None
            self.mode = None

    def _take(self, mode: int) -> None:
        began = time.monotonic()
        fcntl.flock(self._turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(self._main, mode)
        finally:
            fcntl.flock(self._turnstile, fcntl.LOCK_UN)
        self.waited_s += time.monotonic() - began
        self.mode = mode

    def checkpoint(self) -> None:
        """Between two steps: a measurement waiting for the device goes first. Without a waiter the
        shared lock is taken back at once; with one, after its measurement. The processes are idle
        between steps, so nothing of this verification runs on the GPU meanwhile."""
        if self._main is None or self.mode != fcntl.LOCK_SH:
            return
        fcntl.flock(self._main, fcntl.LOCK_UN)
        self._take(fcntl.LOCK_SH)

    @contextlib.contextmanager
    def exclusive(self):
        """The device to this verification alone, then back to shared."""
        if self._main is None or self.mode == fcntl.LOCK_EX:
            yield
            return
        fcntl.flock(self._main, fcntl.LOCK_UN)
        self._take(fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._main, fcntl.LOCK_UN)
            self._take(fcntl.LOCK_SH)


class Stop(Exception):
    """The run ends here: a fault or a failed check decides the verdict already."""


def _default_build_cache() -> str:
    return str(Path(tempfile.gettempdir()) / "kernel-arena-build-cache")


def validate(device: str, baselines) -> tuple[str, ...]:
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    names = tuple(baselines)
    unknown = [b for b in names if b not in BASELINES]
    if unknown:
        raise ValueError(f"unknown baselines {unknown}; choose from {', '.join(BASELINES)}")
    return names


class Session:
    def __init__(self, problem_source, candidate_source, *, device, baselines, limits: Limits, plan: Plan,
                 on_progress, baseline_cache_dir, proof_inputs_source):
        self.problem_source = problem_source
        self.candidate_source = candidate_source
        self.proof_source = proof_inputs_source
        self.device = device
        self.limits = limits
        self.plan = plan
        self.on_progress = on_progress
        self.cache_dir = baseline_cache_dir
        self.ev = Evidence(device=device, baselines=baselines)
        self.rng = random.Random(secrets.randbits(128))
        self.deadline = time.monotonic() + limits.wall_time_s
        self.child: SandboxedProcess | None = None
        self.judge: SandboxedProcess | None = None
        self.stage = None
        # The first call of each new instance compiles what it compiles lazily (torch.compile,
        # Triton's JIT): it runs under the build limit, later calls under the call limit.
        self.building = False
        self.unchecked = 0
        self.lock = DeviceLock(None)

    @contextlib.contextmanager
    def step(self, name: str):
        """Wall time per step, for the verdict's `cost` (where a verification's time goes)."""
        began = time.monotonic()
        try:
            yield
        finally:
            steps = self.ev.cost.setdefault("steps_s", {})
            steps[name] = round(steps.get(name, 0.0) + time.monotonic() - began, 3)

    # -- plumbing -------------------------------------------------------------------------------

    def progress(self, stage: str) -> None:
        if stage != self.stage:
            self.stage = stage
            if self.on_progress:
                self.on_progress(stage)

    def seed(self) -> int:
        return self.rng.randrange(1, 2**62)

    def _timeout(self, limit: float) -> float:
        return max(0.1, min(limit, self.deadline - time.monotonic()))

    def ask(self, side: str, stage: str, message: dict, limit: float | None = None) -> dict:
        """One request; any fault is recorded as evidence and ends the run."""
        return self.receive(self.send(side, stage, message), limit)

    def send(self, side: str, stage: str, message: dict) -> tuple:
        """Half a request, so that both processes can work at once; `receive` takes its reply."""
        process = self.child if side == CANDIDATE else self.judge
        nonce = self.seed()
        try:
            process.send({"op": stage, "nonce": nonce, **message})
        except ProcessFault as fault:
            self.ev.fault = Fault(side, stage, fault.kind, fault.detail)
            raise Stop from None
        return side, stage, nonce, message

    def receive(self, sent: tuple, limit: float | None = None) -> dict:
        side, stage, nonce, message = sent
        process = self.child if side == CANDIDATE else self.judge
        try:
            reply = process.receive(self._timeout(limit or self.limits.call_time_s))
        except ProcessFault as fault:
            self.ev.fault = Fault(side, stage, fault.kind, fault.detail)
            raise Stop from None
        if side == CANDIDATE and process.channel.pending():
            self.ev.protocol.append(f"extra bytes after the reply to {stage}")
            raise Stop
        if reply.get("nonce") != nonce:
            self.ev.protocol.append(f"a reply to {stage} carried the wrong nonce")
            raise Stop
        if reply.get("harness_error"):
            error = reply["harness_error"]
            where = error.get("traceback", "").strip().splitlines()[-3:-1]
            detail = error["message"] + (f" (at {' / '.join(w.strip() for w in where)})" if where else "")
            self.ev.fault = Fault(side, stage, "harness", detail, error.get("cuda", False))
            raise Stop
        required = REQUIRED.get((side, stage), ())
        if stage == "call" and reply.get("ok"):
            required += REQUIRED_AFTER_CALL + (("output",) if message["who"] == CANDIDATE else ())
        missing = [key for key in required if key not in reply]
        if missing:
            self.ev.protocol.append(f"a reply to {stage} lacked {', '.join(missing)}")
            raise Stop
        return reply

    def _candidate_error(self, stage: str, reply: dict) -> None:
        error = reply["error"]
        kind = "memory" if error.get("memory") else "exception"
        self.ev.fault = Fault(CANDIDATE, stage, kind, error["message"], error.get("cuda", False))
        raise Stop

    def _stop_if_failed(self) -> None:
        self.unchecked = 0
        if checks.blocking_failure(self.ev):
            raise Stop

    # -- steps ----------------------------------------------------------------------------------

    def start(self, root: Path) -> None:
        build_root = Path(self.limits.build_cache_dir or _default_build_cache())
        candidate_hash = sha256(self.candidate_source.encode()).hexdigest()[:20]
        # Inductor compiles in the calling thread: no worker process or thread of torch.compile's
        # outlives a call (the harness's compiled baselines included), so none needs excusing.
        extra = {"TORCH_EXTENSIONS_DIR": str(build_root / "torch_extensions" / candidate_hash),
                 "TRITON_CACHE_DIR": str(build_root / "triton"), "TORCHINDUCTOR_COMPILE_THREADS": "1"}
        if self.device == "cpu":
            extra["TRITON_INTERPRET"] = "1"
        self.exchange = root / "exchange"
        self.exchange.mkdir()
        homes = {CANDIDATE: root / "candidate", REFERENCE: root / "reference"}
        for side, home in homes.items():
            home.mkdir()
            (home / "problem.py").write_text(self.problem_source)
            if self.proof_source:
                (home / "proof.py").write_text(self.proof_source)
        (homes[CANDIDATE] / "candidate.py").write_text(self.candidate_source)
        common = dict(memory_bytes=self.limits.memory_bytes, device=self.device, extra_env=extra)
        self.judge = SandboxedProcess(role="reference_process", home=homes[REFERENCE], log_path=root / "reference.log", **common)
        self.child = SandboxedProcess(role="candidate_process", home=homes[CANDIDATE], log_path=root / "candidate.log", **common)
        self.homes = homes

    def start_up(self) -> None:
        """What needs no device lock: torch's import and CUDA's context in both processes."""
        self.ev.env = self.ask(CANDIDATE, "describe", {"device": self.device}, self.limits.start_time_s)["env"]
        self.ask(REFERENCE, "prepare", {"device": self.device, "problem_path": str(self.homes[REFERENCE] / "problem.py"),
                                        "proof_path": str(self.homes[REFERENCE] / "proof.py") if self.proof_source else None},
                 self.limits.start_time_s)

    def inspect_and_prepare(self, inspect: bool = True) -> None:
        """The reference process inspects the problem while the candidate process loads it and builds
        the baselines: two processes, one step. Measuring the device's ceilings is a measurement, so
        then nothing runs beside it: not the other process, not another verification."""
        key = baseline_cache.environment_key(self.ev.env, self.plan.flush_bytes)
        cached = baseline_cache.load_baselines(self.cache_dir, self.problem_source, key)
        self.ev.cached_baselines = {b: cached[b] for b in self.ev.baselines if b != "eager" and b in cached}
        self.ev.rates = baseline_cache.load_rates(self.cache_dir, key)
        to_build = [b for b in self.ev.baselines if b not in self.ev.cached_baselines]
        if "eager" not in to_build:
            to_build.insert(0, "eager")
        measure_rates = self.ev.rates is None and self.plan.speed_of_light and bool(self.ev.baselines)
        inspecting = self.send(REFERENCE, "inspect", {
            "trial_seed": self.seed(), "seeds": [self.seed(), self.seed()],
            "count_flops": self.plan.speed_of_light and bool(self.ev.baselines)}) if inspect else None
        if measure_rates and inspect:
            self._inspected(inspecting)
        preparing = self.send(CANDIDATE, "prepare", {
            "device": self.device, "problem_path": str(self.homes[CANDIDATE] / "problem.py"),
            "proof_path": str(self.homes[CANDIDATE] / "proof.py") if self.proof_source else None,
            "baselines": to_build, "setup_seed": self.seed(), "flush_bytes": self.plan.flush_bytes,
            "gpu_memory_fraction": self.limits.gpu_memory_fraction,
            "measure_rates": measure_rates,
            "prime_compiler": self.profiles() or "compilation" in self.ev.static.get("facts", {}),
        })
        with self.lock.exclusive() if measure_rates else contextlib.nullcontext():
            self.ev.prepared = self.receive(preparing, self.limits.start_time_s)
        if inspect and not measure_rates:
            self._inspected(inspecting)
        if self.ev.rates is None:
            self.ev.rates = self.ev.prepared.get("rates")
            baseline_cache.store_rates(self.cache_dir, key, self.ev.rates)
        self.env_key = key

    def _inspected(self, inspecting: tuple) -> None:
        self.ev.problem = self.receive(inspecting, self.limits.start_time_s)
        self._stop_if_failed()

    def load(self) -> None:
        reply = self.ask(CANDIDATE, "load", {"candidate_path": str(self.homes[CANDIDATE] / "candidate.py")},
                         self.limits.build_time_s)
        if not reply["ok"]:
            self._candidate_error("load", reply)
        self.ev.loaded = reply
        self._stop_if_failed()

    def instantiate(self, seed: int, variant: dict | None = None, *, first: bool = False) -> None:
        self.ask(REFERENCE, "instantiate", {"seed": seed, "variant": variant})
        reply = self.ask(CANDIDATE, "instantiate", {"seed": seed, "variant": variant},
                         self.limits.build_time_s if first else None)
        self.ev.instantiations.append(reply)
        if not reply["ok"]:
            self._candidate_error("instantiate", reply)
        self.building = True
        self._stop_if_failed()

    def call(self, who: str, phase: str, *, compare: bool = False, variant: dict | None = None,
             profile: bool = False) -> Call:
        seed = self.seed()
        message = {"who": who, "seed": seed, "variant": variant, "proof": phase == PROOF, "profile": profile}
        limit = None
        if who == CANDIDATE and self.building:
            limit, self.building = self.limits.build_time_s, False
        began = time.monotonic()
        reply = self.ask(CANDIDATE, "call", message, limit)
        call = Call(who, phase, seed, reply, (time.monotonic() - began) * 1e3)
        self.ev.calls.append(call)
        if not reply["ok"]:
            self._candidate_error("call", reply)
        if who == CANDIDATE and not compare and (self.ev.problem or {}).get("carries_state"):
            # The reference's model goes through every call the candidate's did (reference_process).
            self.ask(REFERENCE, "advance", {"seed": seed, "variant": variant, "proof": phase == PROOF})
        if who == CANDIDATE:
            # Every check reads all the evidence so far: in the timing loop they run after each
            # compared call and every CHECK_EVERY calls (and once after the loop), not after each.
            self.unchecked += 1
            if compare or phase not in (WARMUP, TIMED) or self.unchecked >= CHECK_EVERY:
                self._stop_if_failed()
            if compare:
                self.compare(call, variant)
        return call

    def compare(self, call: Call, variant: dict | None) -> None:
        call.reference = self.ask(REFERENCE, "reference", {"seed": call.seed, "variant": variant, "proof": call.phase == PROOF})
        prefix = self.exchange / f"{self.seed():x}"
        files = self.ask(CANDIDATE, "dump", {"path_prefix": str(prefix)})["files"]
        try:
            call.comparison = self.ask(REFERENCE, "compare", {"seed": call.seed, "files": files})["comparison"]
        finally:
            for entry in files:
                if entry.get("path"):
                    Path(entry["path"]).unlink(missing_ok=True)
        spec = call.reference.get("spec") or [{}]
        dtype = next((leaf.get("dtype") for leaf in spec if leaf.get("dtype")), "float32")
        float32 = call.comparison.pop("against_float32", None)
        if float32 is not None:
            # The problem's own float32 output is beyond any tolerance from float64: the candidate
            # is held to that float32 output at the base tolerance instead (flag float32_reference_inexact).
            call.comparison = {**float32, "against": "float32", "float64_max_rel_error": call.comparison.get("max_rel_error")}
            call.tolerance = scoring.tolerance_for(dtype, None)
        else:
            call.tolerance = scoring.tolerance_for(dtype, call.reference.get("float32_error", {}).get("max_rel_error"))
        if call.phase != VARIANT:
            self._stop_if_failed()

    def trials(self) -> None:
        for trial in range(self.plan.trials):
            if trial:
                self.lock.checkpoint()
            self.instantiate(self.seed(), first=trial == 0)
            for _ in range(self.plan.inputs_per_trial):
                sides = [CANDIDATE] + (["eager"] if self.ev.baselines else [])
                self.rng.shuffle(sides)
                for side in sides:
                    self.call(side, TRIAL, compare=side == CANDIDATE)

    def proof(self) -> None:
        if self.proof_source:
            self.call(CANDIDATE, PROOF, compare=True)

    def timed_sides(self) -> list[str]:
        ready = (self.ev.prepared or {}).get("baselines", {})
        return [CANDIDATE] + [b for b in self.ev.baselines if b not in self.ev.cached_baselines and ready.get(b) == "ready"]

    def time(self) -> None:
        """Shuffled rounds until every median is stable, then `timed_checks` closing rounds in which
        every candidate call is compared too; besides, any timed call is compared at random. The
        closing rounds are timed like the others and count as samples."""
        if not self.ev.baselines:
            return
        sides = self.timed_sides()
        samples = {side: [] for side in sides}
        plan = self.plan
        began = time.monotonic()
        closing = None
        for round_number in range(plan.warmup_rounds + plan.max_samples + plan.timed_checks):
            warm = round_number < plan.warmup_rounds
            if closing is None and not warm and len(samples[CANDIDATE]) >= plan.min_samples and (
                    measurement.converged(samples, plan.target_ci, plan.min_samples)
                    or time.monotonic() - began > plan.timing_budget_s
                    or len(samples[CANDIDATE]) >= plan.max_samples):
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
                    samples[side].append(call.ms)
            if time.monotonic() > self.deadline - 60:
                break
        self._stop_if_failed()

    def profiles(self) -> bool:
        return self.plan.profile and bool(self.ev.baselines)

    def profile(self) -> None:
        if self.profiles():
            self.call(CANDIDATE, PROFILE, compare=True, profile=True)
            self.call("eager", PROFILE, profile=True)

    def shapes(self) -> None:
        constants = problem_shapes.size_constants(self.problem_source)
        if not self.plan.shape_check or not constants:
            self.ev.variant = {"status": "untestable", "detail": "the problem has no size constants to change"}
            return
        for variant in problem_shapes.variants(constants):
            probe = self.seed()
            try:
                self.ask(REFERENCE, "instantiate", {"seed": probe, "variant": variant})
                self.ask(REFERENCE, "reference", {"seed": probe, "variant": variant})
                self.ask(REFERENCE, "forget", {"seed": probe})
            except Stop:
                if self.ev.fault and self.ev.fault.kind != "harness":
                    raise
                self.ev.fault = None
                continue
            self.ev.variant = {"constants": variant, "status": "passed", "detail": ""}
            self._variant_call(variant)
            return
        self.ev.variant = {"status": "untestable", "detail": "the reference itself fails at every other size tried"}

    def _variant_call(self, variant: dict) -> None:
        try:
            self.instantiate(self.seed(), variant)
            call = self.call(CANDIDATE, VARIANT, compare=True, variant=variant)
        except Stop:
            fault, self.ev.fault = self.ev.fault, None
            if fault is not None and fault.kind in ("timeout", "crashed", "memory"):
                self.ev.fault = fault  # the process is gone; the verdict must say why
            self.ev.variant.update(status="failed", detail=f"at {variant} the candidate "
                                   f"{'failed: ' + fault.detail if fault else 'broke a rule'}")
            raise
        mismatch = call.comparison.get("max_rel_error")
        if call.comparison.get("shape_mismatch") or mismatch is None or mismatch > call.tolerance or call.comparison.get("nonfinite"):
            self.ev.variant.update(status="failed", detail=f"at {variant} the output is wrong "
                                   f"(relative error {mismatch if mismatch is not None else 'n/a'})")
        else:
            self.ev.variant["detail"] = f"also right at {variant} (relative error {mismatch:.2g})"

    def finish(self) -> None:
        self.ev.finished = self.ask(CANDIDATE, "finish", {})
        self.ask(REFERENCE, "finish", {})

    # -- the run --------------------------------------------------------------------------------

    def run(self, steps=None) -> Verdict:
        self.ev.static = static_analysis.analyze(self.candidate_source)
        self.progress("building")
        if not self.ev.static.get("parse_error") and self.ev.static.get("names_model_new"):
            root = Path(tempfile.mkdtemp(prefix="kernel-arena-run-"))
            began = time.monotonic()
            try:
                self.start(root)
                (steps or self._steps)()
            except Stop:
                pass
            finally:
                self._close()
                shutil.rmtree(root, ignore_errors=True)
                self.ev.cost["total_s"] = round(time.monotonic() - began, 3)
        verdict = scoring.verdict(self.ev, plan=self.plan, limits=self.limits)
        self._store_baselines(verdict)
        self.progress("done")
        return verdict

    def _steps(self) -> None:
        with self.step("start_up"):
            self.start_up()
        self.lock = DeviceLock(self.limits.device_lock_path)
        try:
            with self.lock:
                self._device_steps()
        finally:
            self.ev.cost["device_wait_s"] = round(self.lock.waited_s, 3)

    def _device_steps(self) -> None:
        with self.step("prepare"):
            self.inspect_and_prepare()
        self.lock.checkpoint()
        with self.step("load"):
            self.load()
        self.lock.checkpoint()
        self.progress("checking")
        with self.step("check"):
            self.trials()
            self.proof()
        self.progress("timing")
        with self.step("time"), self.lock.exclusive():
            self.time()
        self.lock.checkpoint()
        with self.step("profile"):
            self.profile()
        with self.step("shapes"):
            try:
                self.shapes()
            except Stop:
                if self.ev.fault:
                    raise
        self.finish()

    def build_steps(self) -> None:
        """Only what fills the build cache: load the candidate and build one instance."""
        self.start_up()
        self.ev.problem = {}
        self.inspect_and_prepare(inspect=False)
        self.load()
        self.instantiate(self.seed(), first=True)
        self.finish()

    def _close(self) -> None:
        # Killed, not left to exit: once `finish` is answered nothing more is wanted from either (what
        # the candidate printed is in the log already: line-buffered), and a process tearing down
        # CUDA takes a second. The candidate's exit handlers never run.
        for process in (self.child, self.judge):
            if process is not None:
                process.close(0.0)
        if self.child is not None:
            self.ev.log_excerpt = self.child.log_tail()
            self.ev.sandbox = {
                **self.child.report(),
                "reference_process": "the problem alone, in a second sandboxed process that never loads candidate code",
                "wall_time_limit_s": self.limits.wall_time_s,
                "build_time_limit_s": self.limits.build_time_s,
                "call_time_limit_s": self.limits.call_time_s,
                "gpu_memory_fraction": self.limits.gpu_memory_fraction if self.device == "cuda" else None,
                "peak_resident_bytes": self.child.peak_resident_bytes,
            }
        if self.ev.fault and self.ev.fault.side == REFERENCE and self.judge is not None:
            self.ev.log_excerpt = (self.ev.log_excerpt + "\n[reference process]\n" + self.judge.log_tail())[-6000:]

    def _store_baselines(self, verdict: Verdict) -> None:
        if verdict.get("status") in ("error", "timeout", "crashed") and not verdict.get("timing"):
            return
        measured = {name: m for name, m in (verdict.get("timing", {}).get("baselines") or {}).items()
                    if name != "eager" and not m.get("cached")}
        if measured and getattr(self, "env_key", None):
            baseline_cache.store_baselines(self.cache_dir, self.problem_source, self.env_key, measured)


def verify(problem_source: str, candidate_source: str, *, device: str = "cpu", baselines=("eager",), limits=None,
           on_progress=None, baseline_cache_dir=None, proof_inputs_source: str | None = None, plan=None) -> Verdict:
    """Verify one candidate against one problem; see the module docstring for the steps."""
    names = validate(device, baselines)
    session = Session(problem_source, candidate_source, device=device, baselines=names, limits=coerce(Limits, limits),
                      plan=coerce(Plan, plan), on_progress=on_progress, baseline_cache_dir=baseline_cache_dir,
                      proof_inputs_source=proof_inputs_source)
    return session.run()


def build(problem_source: str, candidate_source: str, *, device: str = "cpu", limits=None) -> Verdict:
    """Load and instantiate the candidate only (no reference, no timing), filling the build cache,
    so a batch can compile candidates in parallel before verifying them one at a time."""
    validate(device, ())
    session = Session(problem_source, candidate_source, device=device, baselines=(), limits=coerce(Limits, limits),
                      plan=Plan(speed_of_light=False), on_progress=None, baseline_cache_dir=None, proof_inputs_source=None)
    return session.run(session.build_steps)


def inspect_problem(problem_source: str, *, device: str = "cpu", limits=None) -> dict:
    """Run the problem alone, sandboxed, and report what the platform shows on the problem itself."""
    validate(device, ())
    limits = coerce(Limits, limits)
    root = Path(tempfile.mkdtemp(prefix="kernel-arena-inspect-"))
    judge = None
    try:
        home = root / "reference"
        home.mkdir()
        (home / "problem.py").write_text(problem_source)
        judge = SandboxedProcess(role="reference_process", home=home, log_path=root / "reference.log",
                                 memory_bytes=limits.memory_bytes, device=device,
                                 extra_env={"TRITON_INTERPRET": "1"} if device == "cpu" else {})
        rng = random.Random(secrets.randbits(128))
        try:
            judge.request({"op": "prepare", "device": device, "problem_path": str(home / "problem.py")}, limits.start_time_s)
            report = judge.request({"op": "inspect", "count_flops": True, "trial_seed": rng.randrange(2**62),
                                    "seeds": [rng.randrange(2**62), rng.randrange(2**62)]}, limits.start_time_s)
        except ProcessFault as fault:
            report = {"ok": False, "harness_error": {"message": fault.detail}}
        if report.get("harness_error"):
            return {"ok": False, "degenerate": False, "reason": f"the problem failed: {report['harness_error']['message']}",
                    "log_excerpt": judge.log_tail()}
        report["size_constants"] = [vars(c) for c in problem_shapes.size_constants(problem_source)]
        return scoring.clean(report)
    finally:
        if judge is not None:
            judge.close(0.0)
        shutil.rmtree(root, ignore_errors=True)
