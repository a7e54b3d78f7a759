"""One verification, as a short pipeline of named steps run by the parent process:

    start      the sandboxed processes: the reference process (the problem; every call's inputs and
               the truth), the baseline process (the problem's reference, timed), the candidate
               process (the candidate alone) and, for a hack report, the proof process (its inputs)
    prepare    at once, the reference process inspects the problem (degeneracy, scale, FLOPs and
               bytes) and the baseline process builds and warms the baselines; the candidate process
               sets up its call site and takes its snapshots; then, and only then,
    load       it executes the candidate's source
    check      trials: a fresh ModelNew per secret weight seed, fresh inputs per call, every
               output compared in the reference process against float64
    proof      a hack reporter's inputs, when given
    time       shuffled rounds of candidate and baseline calls on fresh inputs, each side in its own
               process; a secret subset of the timed calls is compared in full too
    profile    the kernels one call of each side launched
    shapes     one more check at other sizes of the problem's constants
    score      the checks in checks.py turn the evidence into a verdict (scoring.py)

The parent never runs problem or candidate code and never parses what they print. It draws every
seed from the OS's secret source, just in time, reads each call's times from the call site's own
pipe, and writes every file a later verification trusts (baseline timings, device rates).

`Verification` holds one run's state and runs its steps in order (`run`); each step lives in the
part of its role: processes.py (start, their rest between requests, their end), problem_inspection.py
(prepare, shapes), calls.py (load, check, proof), measures.py (time, profile), and
process_requests.py (every request and its reply); verifying.py types the whole as the parts see it.
"""

import contextlib
import logging
import math
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict
from hashlib import sha256
from pathlib import Path
from typing import Any, Literal, cast

from evaluation.harness import (
    baseline_cache,
    build_caches,
    callsite,
    flags,
    measurement,
    problem_shapes,
    scoring,
    static_analysis,
)
from evaluation.harness.calls import Calls
from evaluation.harness.device_lock import DeviceLock
from evaluation.harness.evidence import BASELINE, CANDIDATE, REFERENCE, DeviceControl, Evidence, Fault
from evaluation.harness.limits import Limits, Plan, coerce, memory_for
from evaluation.harness.measures import Measures
from evaluation.harness.problem_inspection import ProblemInspection
from evaluation.harness.process_requests import ProcessRequests, Stop
from evaluation.harness.processes import QUIET_WINDOWS, Processes
from evaluation.harness.protocol import TimingPipe
from evaluation.harness.sandbox import ProcessFault, SandboxedProcess
from evaluation.harness.sandbox_command import HOME, NotConfined, View
from evaluation.harness.verdict import BASELINES, Verdict

logger = logging.getLogger(__name__)

DEVICES = ("cpu", "cuda")
STAGES = ("building", "checking", "timing", "done")

# The caller's hook, called with each stage as the verification reaches it (STAGES).
OnProgress = Callable[[str], object]


def validate(device: str, baselines: Iterable[str]) -> tuple[str, ...]:
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    names = tuple(baselines)
    unknown = [b for b in names if b not in BASELINES]
    if unknown:
        raise ValueError(f"unknown baselines {unknown}; choose from {', '.join(BASELINES)}")
    return names


class Verification(ProblemInspection, Calls, Measures, Processes, ProcessRequests):
    """One verification: its state, its steps in order (`run`), and its verdict."""

    def __init__(
        self,
        problem_source: str,
        candidate_source: str,
        *,
        device: str,
        baselines: tuple[str, ...],
        limits: Limits,
        plan: Plan,
        on_progress: OnProgress | None,
        baseline_cache_dir: str | None,
        proof_inputs_source: str | None,
        keep_control: bool = False,
    ) -> None:
        self.problem_source = problem_source
        # A probe of the device (`probe`): its A/A control is kept as the device's state, which later
        # verifications of any problem read. Only where no user code chooses anything: a pasted problem
        # could tell which process it runs in, and a candidate could answer right only while the host is
        # loaded, so that the controls kept were the ones it picked; either would set the state for all.
        self.keep_control = keep_control
        # The device's key for what is kept about it (baseline_cache), once it has described itself.
        self.env_key: dict[str, Any] | None = None
        self.candidate_source = candidate_source
        self.proof_source = proof_inputs_source
        self.device = device
        self.limits = limits
        self.plan = plan
        self.on_progress = on_progress
        self.cache_dir = baseline_cache_dir
        self.evidence = Evidence(device=device, baselines=baselines)
        self.rng = secrets.SystemRandom()
        self.deadline = time.monotonic() + limits.wall_time_s
        self.processes: dict[str, SandboxedProcess] = {}
        self.timing: dict[str, TimingPipe] = {}
        self.stage: str | None = None
        # The first call of each new instance compiles what it compiles lazily (torch.compile,
        # Triton's JIT): it runs under the build limit, later calls under the call limit.
        self.building = False
        self.unchecked = 0
        self.lock = DeviceLock(None)
        self.eager_ms: float | None = None
        self.poison_outputs = True
        # Sides for half of whose calls of a burst the gate's watchdog had to open it (they wait for the
        # device inside a call): their later bursts run ungated, the host's issuing inside their
        # intervals (callsite.c, the gate).
        self.ungated: set[str] = set()
        # The candidate's sandbox is frozen whenever it is not answering a request of its own
        # (`_rest_candidate`): nothing of it runs while a baseline or the reference works.
        self.frozen = False
        self.idle_mark: tuple[int, float] | None = None
        self.harness_tasks: set[int] | None = None
        self.closed = False
        if keep_control:
            self.control = True  # a control to keep, whatever the plan
        elif plan.control is not None:
            self.control = plan.control
        elif device == "cpu":
            self.control = True
        else:
            # A sample of a GPU's verdicts judge themselves by their own control; a probe always runs one.
            self.control = self.rng.random() < plan.control_share
        # What this verification holds until it ends (its build caches, against eviction).
        self.holds = contextlib.ExitStack()
        self.build_root: Path | None = None
        self.round_trip_ms = 0.0
        # A build ahead (`build(ahead=True)`): the candidate's process alone, with no device.
        self.ahead = False
        # The run's own folder (sources, logs), made by `run`.
        self.root: Path | None = None
        # The candidate's and the problem's build caches, bound into their sandboxes (`start`).
        self.caches: tuple[Path, ...] = ()
        # What each process sees (`start`): its sources, caches and device, by side.
        self.views: dict[str, View] = {}
        # The baseline process's description of the device and its environment (`start_up`).
        self.described: dict[str, Any] = {}
        # The most bytes of output a call may return, from the reference's own (`inspect_and_prepare`).
        self.max_output_bytes = 64 << 20
        # The request the harness works with now: whose reply it could not use names that process.
        self.last_request: tuple[str, str] = (REFERENCE, "start")

    @contextlib.contextmanager
    def step(self, name: str, into: Literal["steps_s", "timing_s"] = "steps_s") -> Iterator[None]:
        """Wall time per step, for the verdict's `cost` (where a verification's time goes); `into`
        "timing_s": the timing step's parts, by measure."""
        began = time.monotonic()
        try:
            yield
        finally:
            steps = self.evidence.cost.setdefault(into, {})
            steps[name] = round(steps.get(name, 0.0) + time.monotonic() - began, 3)

    def progress(self, stage: str) -> None:
        if stage != self.stage:
            self.stage = stage
            if self.on_progress:
                # The caller's hook (a worker writing the stage to its database, say) is not the
                # candidate's evidence: its failure must never become a verdict on the candidate.
                try:
                    self.on_progress(stage)
                except Exception:
                    logger.exception("the progress hook failed at %s; the verification goes on", stage)

    def finish(self) -> None:
        if self.harness_tasks is not None and self.evidence.idle["quiet_windows"] < QUIET_WINDOWS:
            # The windows the draw did not place yet: the candidate thawed and idle, as after a reply.
            self._wake_candidate()
            while self.evidence.idle["quiet_windows"] < QUIET_WINDOWS:
                self.quiet_window()
        self.evidence.finished = self.ask(CANDIDATE, "finish", {})
        self.ask(REFERENCE, "finish", {})
        self.ask(BASELINE, "finish", {})

    def run(self, steps: Callable[[], None] | None = None) -> Verdict:
        self.evidence.static = static_analysis.analyze(self.candidate_source)
        self.progress("building")
        if not self.evidence.static.get("parse_error") and self.evidence.static.get("names_model_new"):
            self.root = Path(tempfile.mkdtemp(prefix="kernel-court-run-"))
            os.chmod(self.root, 0o755)
            began = time.monotonic()
            try:
                self.refuse_oversized()
                self.start(self.root)
                (steps or self._steps)()
            except Stop:
                pass
            except NotConfined as exc:
                self.evidence.unconfined = str(exc)
            except Exception as exc:  # noqa: BLE001  (a reply the harness could not use: a verdict says whose)
                side, stage = self.last_request
                detail = f"the harness could not use what the {side} process answered to {stage} ({type(exc).__name__}: {exc})"
                if side == CANDIDATE:
                    self.evidence.protocol.append(detail)
                else:
                    self.evidence.fault = Fault(side, stage, "harness", detail)
            finally:
                self._close()
                self._scrub_caches()
                self.holds.close()
                if self.build_root is not None:
                    removed = build_caches.evict(self.build_root, self.limits.build_caches_bytes)
                    if removed:
                        self.evidence.cost.setdefault("build_caches_removed", []).extend(removed)
                shutil.rmtree(self.root, ignore_errors=True)
                self.evidence.cost["total_s"] = round(time.monotonic() - began, 3)
        own_control = self._own_control()
        try:
            verdict = scoring.verdict(self.evidence, plan=self.plan, limits=self.limits)
        except Exception as exc:  # noqa: BLE001  (evidence of a shape no check expects: still a verdict)
            verdict = scoring.failed_verdict(
                self.evidence,
                f"the harness could not judge this run's evidence ({type(exc).__name__}: {exc}); staff can re-verify it",
            )
        self._store_baselines(verdict)
        if own_control is not None and verdict.get("status") == "verified":
            assert self.env_key is not None  # a control is only kept where the device described itself
            baseline_cache.record_control(self.cache_dir, self.env_key, self.problem_source, own_control)
        self.progress("done")
        return verdict

    def _own_control(self) -> dict[str, Any] | None:
        """This verification's A/A control as a record of the device's, where it is a probe (`probe`):
        counted in the spread this verdict states, and kept (`run`) where the verdict is verified."""
        control = flags.aa_control(self.evidence, self.plan.bootstrap_resamples) if self.control else None
        if not self.keep_control or not control or not control["interval"] or self.env_key is None:
            return None
        low, high = control["interval"]
        if min(low, high, control["speedup"]) <= 0:
            return None
        record = {
            "log_ratio": math.log(control["speedup"]),
            "within": (math.log(high) - math.log(low)) / (2 * measurement.Z95),
            "off": control["off"],
            "call_ms": control["call_ms"],
            "at": time.time(),
        }
        problem = sha256(self.problem_source.encode()).hexdigest()
        # The record's fields are a DeviceControl's but for its problem.
        self.evidence.device_controls = [c for c in self.evidence.device_controls if c["problem"] != problem] + [
            cast(DeviceControl, {"problem": problem, **record})
        ]
        return record

    def _steps(self) -> None:
        with self.on_device():
            with self.step("start_up"):
                self.start_up()
            self._device_steps()

    def _device_steps(self) -> None:
        with self.step("prepare"):
            self.inspect_and_prepare()
        with self.step("load"):
            self.load()
        self.progress("checking")
        with self.step("check"):
            self.trials()
            self.proof()
        self.progress("timing")
        with self.step("time"):
            with self.step("latency", into="timing_s"):
                self.time()
            self.measure_steady()
        with self.step("profile"):
            self.profile()
        with self.step("shapes"):
            try:
                self.shapes()
            except Stop:
                if self.evidence.fault or self.evidence.protocol:
                    raise
        self.finish()

    def build_steps(self) -> None:
        """Only what fills the build cache: load the candidate and build one instance (on the device,
        so under its lock like a verification)."""
        with self.on_device():
            self.start_up()
            self.evidence.problem = {}
            self.inspect_and_prepare(inspect=False)
            self.load()
            self.instantiate(self.seed(), first=True)
            self.finish()

    def ahead_steps(self) -> None:
        """A build ahead: the candidate's module executed in its own sandbox under the build limit, no
        device in it (no GPU node bound, CUDA_VISIBLE_DEVICES empty), so that the load_inline calls
        at its top level fill the build cache the verification of the same source then reads. Nothing
        touches a device, so no lock: builds ahead run on the CPU cores beside verifications."""
        with self.step("start_up"):
            self.ask(CANDIDATE, "describe", {"device": "cpu"}, self.limits.start_time_s)
            preparation = {"spec": [], "gpu_memory_fraction": 0.0, "max_output_bytes": 64 << 20, "poison_outputs": False}
            self.ask(CANDIDATE, "prepare", preparation, self.limits.start_time_s)
        with self.step("load"):
            self.load()
        self.evidence.finished = self.ask(CANDIDATE, "finish", {})

    def _store_baselines(self, verdict: Verdict) -> None:
        """Only a verified run's timings, each of at least the plan's samples, are kept for later runs:
        a candidate rejected for running beside the baselines must not leave its effect on them."""
        if verdict.get("status") != "verified":
            return
        measures = verdict.get("timing", {}).get("measures") or {}
        steady, latency = (
            (measures.get("steady_state") or {}).get("baselines") or {},
            (measures.get("latency") or {}).get("baselines") or {},
        )
        measured = {
            name: {"steady_state": m, "latency": latency.get(name)}
            for name, m in steady.items()
            if name != "eager" and not m.get("cached") and m.get("rounds", 0) >= self.plan.steady_min_rounds
        }
        if measured and self.env_key:
            baseline_cache.store_baselines(self.cache_dir, self.problem_source, self.env_key, measured)


def verify(
    problem_source: str,
    candidate_source: str,
    *,
    device: str = "cpu",
    baselines: Iterable[str] = ("eager",),
    limits: Limits | dict[str, Any] | None = None,
    on_progress: OnProgress | None = None,
    baseline_cache_dir: str | None = None,
    proof_inputs_source: str | None = None,
    plan: Plan | dict[str, Any] | None = None,
    keep_control: bool = False,
) -> Verdict:
    """Verify one candidate against one problem; see the module docstring for the steps.
    `keep_control`: keep its A/A control as the device's state; only for `probe`, or a batch whose
    operator vouches for its problems and candidates (CLI `--keep-control`)."""
    names = validate(device, baselines)
    verification = Verification(
        problem_source,
        candidate_source,
        device=device,
        baselines=names,
        limits=coerce(Limits, limits),
        plan=coerce(Plan, plan),
        on_progress=on_progress,
        baseline_cache_dir=baseline_cache_dir,
        proof_inputs_source=proof_inputs_source,
        keep_control=keep_control,
    )
    return verification.run()


def probe(
    problem_source: str,
    *,
    device: str = "cpu",
    baseline_cache_dir: str | None,
    limits: Limits | dict[str, Any] | None = None,
    plan: Plan | dict[str, Any] | None = None,
) -> Verdict:
    """An A/A probe of the device: a staff-curated problem's own Model verified as the candidate, against
    eager, with the A/A control, which is kept as the device's (`baseline_cache.load_controls`): the
    spread between processes that widens every stated interval, and whether the device reads 1.0. No
    user code runs in it, so nobody chooses which controls are kept."""
    plan = coerce(Plan, plan)
    return verify(
        problem_source,
        f"{problem_source}\n\nModelNew = Model\n",
        device=device,
        baselines=("eager",),
        limits=limits,
        # However short the worker's plan, rounds enough for the control's interval.
        plan={
            **asdict(plan),
            "control": True,
            "steady_min_rounds": max(plan.steady_min_rounds, 6),
            "steady_max_rounds": max(plan.steady_max_rounds, 6),
            "steady_budget_s": max(plan.steady_budget_s, 5.0),
        },
        baseline_cache_dir=baseline_cache_dir,
        keep_control=True,
    )


def build(
    problem_source: str,
    candidate_source: str,
    *,
    device: str = "cpu",
    limits: Limits | dict[str, Any] | None = None,
    ahead: bool = False,
) -> Verdict:
    """Load and instantiate the candidate only (no reference, no timing), filling the build cache,
    so a batch can compile candidates in parallel before verifying them one at a time. `ahead`: load
    only, with no device (`Verification.ahead_steps`), for the CPU cores while the GPUs verify."""
    validate(device, ())
    verification = Verification(
        problem_source,
        candidate_source,
        device=device,
        baselines=(),
        limits=coerce(Limits, limits),
        plan=Plan(speed_of_light=False, control=False if ahead else None),
        on_progress=None,
        baseline_cache_dir=None,
        proof_inputs_source=None,
    )
    verification.ahead = ahead
    return verification.run(verification.ahead_steps if ahead else verification.build_steps)


def inspect_problem(problem_source: str, *, device: str = "cpu", limits: Limits | dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the problem alone, sandboxed, and report what the platform shows on the problem itself."""
    validate(device, ())
    limits = coerce(Limits, limits)
    root = Path(tempfile.mkdtemp(prefix="kernel-court-inspect-"))
    os.chmod(root, 0o755)
    judge: SandboxedProcess | None = None
    try:
        (root / "problem.py").write_text(problem_source)
        os.chmod(root / "problem.py", 0o644)
        view = View(device, readable=[(str(root / "problem.py"), f"{HOME}/src/problem.py")])
        judge = SandboxedProcess(
            role="reference_process",
            view=view,
            log_path=root / "reference.log",
            memory_bytes=memory_for(REFERENCE, limits),
            callsite_dir=callsite.build(),
            extra_env={"TRITON_INTERPRET": "1"} if device == "cpu" else {},
            allow_unconfined=not limits.require_sandbox,
        )
        try:
            judge.request(
                {"op": "prepare", "device": device, "problem_path": view.path(root / "problem.py")}, limits.start_time_s
            )
            report = judge.request(
                {
                    "op": "inspect",
                    "count_flops": True,
                    "trial_seed": secrets.randbelow(2**62),
                    "seeds": [secrets.randbelow(2**62), secrets.randbelow(2**62)],
                },
                limits.start_time_s,
            )
        except ProcessFault as fault:
            report = {"ok": False, "harness_error": {"message": fault.detail}}
        if report.get("harness_error"):
            return {
                "ok": False,
                "degenerate": False,
                "reason": f"the problem failed: {report['harness_error']['message']}",
                "log_excerpt": judge.log_tail(),
            }
        report["size_constants"] = [vars(c) for c in problem_shapes.size_constants(problem_source)]
        cleaned: dict[str, Any] = scoring.clean({k: v for k, v in report.items() if k != "nonce"})
        return cleaned
    finally:
        if judge is not None:
            judge.close(0.0)
        shutil.rmtree(root, ignore_errors=True)
