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
"""

import contextlib
import logging
import math
import os
import secrets
import shutil
import tempfile
import time
from dataclasses import asdict
from hashlib import sha256
from pathlib import Path

from evaluation.harness import (
    baseline_cache,
    build_caches,
    callsite,
    checks,
    flags,
    measurement,
    problem_shapes,
    scoring,
    static_analysis,
)
from evaluation.harness.device_lock import DeviceLock
from evaluation.harness.evidence import (
    BASELINE,
    CANDIDATE,
    CONTROL,
    DEVICE,
    PROFILE,
    PROOF,
    REFERENCE,
    STEADY,
    TIMED,
    TRIAL,
    VARIANT,
    WARMUP,
    Call,
    Evidence,
    Fault,
)
from evaluation.harness.limits import Limits, Plan, coerce, host_memory_bytes, memory_for
from evaluation.harness.protocol import (
    CANDIDATE_FACTS,
    REFERENCE_FACTS,
    REQUIRED,
    REQUIRED_AFTER_CALL,
    TimingPipe,
    link,
    record_key,
)
from evaluation.harness.sandbox import HOME, NotConfined, ProcessFault, SandboxedProcess, View, bytecode_cache, sandbox_owner
from evaluation.harness.verdict import BASELINES, Verdict

logger = logging.getLogger(__name__)

DEVICES = ("cpu", "cuda")
PROOF_SIDE = "proof"
STAGES = ("building", "checking", "timing", "done")
CHECK_EVERY = 16
# Quiet windows: after replies drawn at random (after these requests), the candidate is left idle and
# unfrozen for QUIET_WINDOW_S and watched, QUIET_WINDOWS times a verification; a thread of its own that
# ran more than QUIET_THREAD_MS then was working between calls.
QUIET_AFTER = ("instantiate", "call", "burst", "graph")
QUIET_WINDOWS, QUIET_WINDOW_S, QUIET_CHANCE, QUIET_THREAD_MS = 3, 0.03, 1 / 8, 1.0


class Stop(Exception):
    """The run ends here: a fault or a failed check decides the verdict already."""


def _default_build_cache() -> str:
    return str(Path(tempfile.gettempdir()) / f"kernel-court-build-cache-{os.geteuid()}")


def _chown_tree(folder: Path, uid: int, gid: int) -> None:
    """`folder` and what it holds, owned by uid:gid (a cache written by an earlier sandbox of another user)."""
    if folder.stat().st_uid == uid:
        return
    for directory, names, files in os.walk(folder):
        for name in [*names, *files]:
            with contextlib.suppress(OSError):
                os.lchown(os.path.join(directory, name), uid, gid)
    os.chown(folder, uid, gid)


def validate(device: str, baselines) -> tuple[str, ...]:
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    names = tuple(baselines)
    unknown = [b for b in names if b not in BASELINES]
    if unknown:
        raise ValueError(f"unknown baselines {unknown}; choose from {', '.join(BASELINES)}")
    return names


class Verification:
    def __init__(
        self,
        problem_source,
        candidate_source,
        *,
        device,
        baselines,
        limits: Limits,
        plan: Plan,
        on_progress,
        baseline_cache_dir,
        proof_inputs_source,
        keep_control=False,
    ):
        self.problem_source = problem_source
        # A probe of the device (`probe`): its A/A control is kept as the device's state, which later
        # verifications of any problem read. Only where no user code chooses anything: a pasted problem
        # could tell which process it runs in, and a candidate could answer right only while the host is
        # loaded, so that the controls kept were the ones it picked; either would set the state for all.
        self.keep_control = keep_control
        # The device's key for what is kept about it (baseline_cache), once it has described itself.
        self.env_key: dict | None = None
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
        self.stage = None
        # The first call of each new instance compiles what it compiles lazily (torch.compile,
        # Triton's JIT): it runs under the build limit, later calls under the call limit.
        self.building = False
        self.unchecked = 0
        self.lock = DeviceLock(None)
        self.eager_ms = None
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

    @contextlib.contextmanager
    def step(self, name: str, into: str = "steps_s"):
        """Wall time per step, for the verdict's `cost` (where a verification's time goes); `into`
        "timing_s": the timing step's parts, by measure."""
        began = time.monotonic()
        try:
            yield
        finally:
            steps = self.evidence.cost.setdefault(into, {})
            steps[name] = round(steps.get(name, 0.0) + time.monotonic() - began, 3)

    # -- plumbing -------------------------------------------------------------------------------

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

    def seed(self) -> int:
        return secrets.randbelow(2**62 - 1) + 1

    def _timeout(self, limit: float) -> float:
        return max(0.1, min(limit, self.deadline - time.monotonic()))

    def ask(self, side: str, stage: str, message: dict, limit: float | None = None, limit_name: str | None = None) -> dict:
        """One request; any fault is recorded as evidence and ends the run."""
        return self.receive(self.send(side, stage, message), limit, limit_name)

    def send(self, side: str, stage: str, message: dict) -> tuple:
        """Half a request, so that several processes can work at once; `receive` takes its reply."""
        self.last_request = (side, stage)
        if side == CANDIDATE:
            self._wake_candidate()
        nonce = self.seed()
        # Before the request leaves: the process may answer before this thread runs again (a loaded
        # host), and no time it reports may then seem longer than the parent waited.
        sent_at = time.monotonic()
        try:
            self.processes[side].send({"op": stage, "nonce": nonce, **message})
        except ProcessFault as fault:
            self.evidence.fault = Fault(side, stage, fault.kind, fault.detail)
            raise Stop from None
        return side, stage, nonce, message, sent_at

    def receive(self, sent: tuple, limit: float | None = None, limit_name: str | None = None) -> dict:
        side, stage, nonce, message, sent_at = sent
        self.last_request = (side, stage)  # what the harness works with next is this reply
        process = self.processes[side]
        limit = limit or self.limits.call_time_s
        try:
            reply = process.receive(self._timeout(limit))
            # The request's round trip on the parent's clock, before the parent's own work around the
            # candidate's rest (freezing it, a quiet window): what `timed_ask` holds its times to.
            self.round_trip_ms = (time.monotonic() - sent_at) * 1e3
            if side == CANDIDATE:
                self._rest_candidate(stage)
        except ProcessFault as fault:
            detail = fault.detail
            if fault.kind == "timeout":
                named = limit_name or f"the limit of {limit:.0f} s on one request"
                detail = (
                    f"{named} ran out and it was killed"
                    if self._timeout(limit) >= limit - 0.5
                    else f"the verification's wall limit ({self.limits.wall_time_s:.0f} s) ran out and it was killed"
                )
            self.evidence.fault = Fault(side, stage, fault.kind, detail)
            raise Stop from None
        # Where a verification's wall time goes, by process and request (the steps overlap them).
        spent = self.evidence.cost.setdefault("requests_s", {})
        spent[f"{side} {stage}"] = round(spent.get(f"{side} {stage}", 0.0) + time.monotonic() - sent_at, 3)
        if side == CANDIDATE and process.channel.pending():
            self.evidence.protocol.append(f"extra bytes after the reply to {stage}")
            raise Stop
        if reply.get("nonce") != nonce:
            self.evidence.protocol.append(f"a reply to {stage} carried the wrong nonce")
            raise Stop
        if reply.get("harness_error"):
            error = reply["harness_error"]
            if stage == "take_proof":  # the proof's inputs, refused or unreadable: the proof's fault
                self.evidence.fault = Fault(PROOF_SIDE, stage, "exception", error["message"])
                raise Stop
            if side == CANDIDATE and error.get("type") == "Tampered":
                self.evidence.protocol.append(error["message"].removeprefix("Tampered: "))
                raise Stop
            where = error.get("traceback", "").strip().splitlines()[-3:-1]
            detail = error["message"] + (f" (at {' / '.join(w.strip() for w in where)})" if where else "")
            self.evidence.fault = Fault(side, stage, "harness", detail, error.get("cuda", False))
            raise Stop
        if reply.get("violation"):
            self.evidence.protocol.append(reply["violation"])
            raise Stop
        required = REQUIRED.get((side, stage), ())
        if side == CANDIDATE and stage in ("call", "graph") and reply.get("ok"):
            required += REQUIRED_AFTER_CALL + (("graph",) if stage == "graph" else ())
        missing = [key for key in required if key not in reply]
        if missing:
            self.evidence.protocol.append(f"a reply to {stage} lacked {', '.join(missing)}")
            raise Stop
        if side == CANDIDATE:
            malformed = [key for key, valid in CANDIDATE_FACTS.items() if key in reply and not valid(reply[key])]
            if malformed:
                self.evidence.protocol.append(
                    f"a reply to {stage} held {', '.join(malformed)} of a shape the harness never sends"
                )
                raise Stop
        elif side == REFERENCE:
            malformed = [key for key, valid in REFERENCE_FACTS.items() if key in reply and not valid(reply[key])]
            if malformed:
                self.evidence.fault = Fault(
                    side,
                    stage,
                    "harness",
                    f"its reply held {', '.join(malformed)} of a shape the harness never sends (the problem's code rewrote it)",
                )
                raise Stop
        return reply

    # -- the candidate between its requests ---------------------------------------------------------

    def _rest_candidate(self, stage: str) -> None:
        """The candidate has answered: its sandbox is frozen until its next request, so that nothing
        it left behind (a thread, frameless or not, a process) runs beside a baseline, the reference
        or another measurement. What it ran from its reply to the freeze is counted (its control
        group's CPU time). Now and then, at a reply drawn in secret, it is first left idle and unfrozen
        for a moment, and what ran then is named (`quiet_between_calls`, `no_background_threads`)."""
        process = self.processes[CANDIDATE]
        if stage == "prepare":
            # Everything of the harness's own is running now, before any candidate code: its threads.
            self.harness_tasks = set(process.tasks())
        idle = self.evidence.idle
        if (
            self.harness_tasks is not None
            and stage in QUIET_AFTER
            and idle["quiet_windows"] < QUIET_WINDOWS
            and self.rng.random() < QUIET_CHANCE
        ):
            self.quiet_window()
        self.idle_mark = (process.cpu_ns(), time.monotonic())
        self.frozen = process.freeze()
        idle["frozen"] = idle.get("frozen", True) and self.frozen

    def _wake_candidate(self) -> None:
        process = self.processes.get(CANDIDATE)
        if process is None or self.idle_mark is None:
            return
        cpu, since = self.idle_mark
        self.evidence.idle["between_cpu_ms"] += (process.cpu_ns() - cpu) / 1e6
        self.evidence.idle["between_wall_ms"] += (time.monotonic() - since) * 1e3
        self.idle_mark = None
        if self.frozen:
            process.thaw()
            self.frozen = False

    def quiet_window(self) -> None:
        """The candidate, idle between requests and not frozen, watched for QUIET_WINDOW_S: its control
        group's CPU time, and each thread that ran and was not the harness's own before the candidate
        loaded (read from /proc outside its sandbox, so a thread with no Python frame is seen too)."""
        process = self.processes[CANDIDATE]
        before, cpu, began = process.tasks(), process.cpu_ns(), time.monotonic()
        time.sleep(QUIET_WINDOW_S)
        after, ran, wall = process.tasks(), process.cpu_ns() - cpu, time.monotonic() - began
        idle = self.evidence.idle
        idle["quiet_windows"] += 1
        idle["quiet_wall_ms"] += wall * 1e3
        idle["quiet_cpu_ms"] += ran / 1e6
        for tid, (name, spent) in after.items():
            busy_ms = (spent - before.get(tid, (name, 0))[1]) / 1e6
            if tid not in (self.harness_tasks or ()) and busy_ms > QUIET_THREAD_MS:
                label = f"thread {tid} named {name!r}, {busy_ms:.1f} ms of CPU in {wall * 1e3:.0f} ms idle"
                idle["busy_threads"] = [*idle.get("busy_threads", []), label][:8]

    def read_timing(self, side: str, stage: str, burst: int | None = None):
        """The call site's record of one call, or (`burst`: the calls asked for) a burst's records and its own."""
        try:
            pipe = self.timing[side]
            return pipe.read(timeout=10.0) if burst is None else pipe.read_burst(burst, timeout=10.0)
        except ProcessFault as fault:
            if side == CANDIDATE:
                self.evidence.protocol.append(fault.detail)
            else:
                self.evidence.fault = Fault(side, stage, "harness", fault.detail)
            raise Stop from None

    def _candidate_error(self, stage: str, reply: dict) -> None:
        error = reply["error"]
        kind = "memory" if error.get("memory") else "exception"
        self.evidence.fault = Fault(CANDIDATE, stage, kind, error["message"], error.get("cuda", False))
        raise Stop

    def _stop_if_failed(self) -> None:
        self.unchecked = 0
        if checks.blocking_failure(self.evidence):
            raise Stop

    # -- limits ---------------------------------------------------------------------------------

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

    # -- steps ----------------------------------------------------------------------------------

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

    def start(self, root: Path) -> None:
        began = time.monotonic()
        build_root = Path(self.limits.build_cache_dir or _default_build_cache())
        candidate_hash = sha256(self.candidate_source.encode()).hexdigest()[:24]
        problem_hash = sha256(self.problem_source.encode()).hexdigest()[:24]
        candidate_cache = build_root / "candidates" / candidate_hash
        baseline_cache_dir = build_root / "baselines" / problem_hash
        # Nobody but the harness (and, inside its own, the sandbox's user) may even reach a cache: a
        # planted setuid file is useless to other users.
        for folder in (build_root, build_root / "candidates", build_root / "baselines", candidate_cache, baseline_cache_dir):
            folder.mkdir(exist_ok=True)
            os.chmod(folder, 0o700)
        self.build_root = build_root
        self.holds.enter_context(build_caches.in_use(candidate_cache, baseline_cache_dir))
        owner = sandbox_owner()
        if owner is not None:
            # The sandboxes write their caches as their own host user (bubblewrap, as root, binds them).
            for folder in (candidate_cache, baseline_cache_dir):
                _chown_tree(folder, *owner)
        self.caches = (candidate_cache, baseline_cache_dir)
        sources = root / "sources"
        sources.mkdir()
        (sources / "problem.py").write_text(self.problem_source)
        (sources / "candidate.py").write_text(self.candidate_source)
        if self.control:
            # The A/A control's "candidate": the problem's own Model, under the name a candidate uses.
            (sources / "control.py").write_text(f"{self.problem_source}\n\nModelNew = Model\n")
        if self.proof_source:
            (sources / "proof.py").write_text(self.proof_source)
        for path in sources.iterdir():
            os.chmod(path, 0o644)
        os.chmod(sources, 0o755)
        callsite_dir = callsite.build()
        problem = [(str(sources / "problem.py"), f"{HOME}/src/problem.py")]
        # Inductor compiles in the calling thread: no worker process or thread of torch.compile's
        # outlives a call (the compiled baselines included), so none needs excusing.
        common_env = {"TORCHINDUCTOR_COMPILE_THREADS": "1"}
        if self.device == "cpu":
            common_env["TRITON_INTERPRET"] = "1"
        cache = f"{HOME}/.cache"
        build_env = {
            "TORCH_EXTENSIONS_DIR": f"{cache}/torch_extensions",
            "TRITON_CACHE_DIR": f"{cache}/triton",
            "TORCHINDUCTOR_CACHE_DIR": f"{cache}/inductor",
        }
        bytecode = bytecode_cache()
        views = {
            REFERENCE: View(self.device, readable=list(problem), bytecode=bytecode),
            BASELINE: View(self.device, readable=list(problem), writable=[(str(baseline_cache_dir), cache)], bytecode=bytecode),
            CANDIDATE: View(
                self.device,
                readable=[(str(sources / "candidate.py"), f"{HOME}/src/candidate.py")],
                writable=[(str(candidate_cache), cache)],
                bytecode=bytecode,
                device_nodes=not self.ahead,
            ),
        }
        if self.control:
            views[CONTROL] = View(
                self.device, readable=[(str(sources / "control.py"), f"{HOME}/src/candidate.py")], bytecode=bytecode
            )
        if self.proof_source:
            views[PROOF_SIDE] = View(
                self.device, readable=problem + [(str(sources / "proof.py"), f"{HOME}/src/proof.py")], bytecode=bytecode
            )
        self.views = views
        # Every call's inputs come from the reference process, to the candidate's and the baseline's
        # call sites alike; the candidate's call site sends back what its calls return.
        timing_c, timing_b, capture, feed, ready_b, feed_b = link(), link(), link(), link(), link(), link()
        proof_link = link() if self.proof_source else (-1, -1)
        # Each call site's records carry a tag under a key of its own, which it reads at its start.
        (key_c, key_fd_c), (key_b, key_fd_b) = record_key(), record_key()
        timing_k, capture_k, feed_k = (link(), link(), link()) if self.control else ((-1, -1),) * 3
        key_k, key_fd_k = record_key() if self.control else (b"", -1)
        allow = not self.limits.require_sandbox
        common = {"device_env": common_env, "root": root, "callsite_dir": callsite_dir, "allow": allow}
        if not self.ahead:
            self._spawn(
                REFERENCE,
                pass_fds=(capture[0], feed[1], proof_link[0], ready_b[0], feed_b[1], capture_k[0], feed_k[1]),
                **common,
            )
            self._spawn(BASELINE, pass_fds=(timing_b[1], ready_b[1], feed_b[0], key_fd_b), extra_env=build_env, **common)
        # Ahead, no GPU at all (TORCH_CUDA_ARCH_LIST, passed through, names what to build for) and one
        # compiler job per build: the batch runs --build-cpus of them at a time.
        ahead_env = {"CUDA_VISIBLE_DEVICES": "", "MAX_JOBS": "1"} if self.ahead else {}
        self._spawn(
            CANDIDATE, pass_fds=(timing_c[1], capture[1], feed[0], key_fd_c), extra_env={**build_env, **ahead_env}, **common
        )
        if self.control:
            self._spawn(CONTROL, pass_fds=(timing_k[1], capture_k[1], feed_k[0], key_fd_k), **common)
        if self.proof_source:
            self._spawn(PROOF_SIDE, pass_fds=(proof_link[1],), **common)
        links = (timing_c[1], timing_b[1], timing_k[1], *capture, *feed, *ready_b, *feed_b, *capture_k, *feed_k, *proof_link)
        for fd in (*links, key_fd_c, key_fd_b, key_fd_k):
            if fd >= 0:
                os.close(fd)
        self.timing = {CANDIDATE: TimingPipe(timing_c[0], key_c), BASELINE: TimingPipe(timing_b[0], key_b)}
        if self.control:
            self.timing[CONTROL] = TimingPipe(timing_k[0], key_k)
        self.evidence.cost["sandbox_start_s"] = round(time.monotonic() - began, 3)

    def _spawn(
        self,
        side: str,
        *,
        pass_fds: tuple,
        device_env: dict,
        root: Path,
        callsite_dir: Path,
        allow: bool,
        extra_env: dict | None = None,
    ) -> None:
        module = {
            REFERENCE: "reference_process",
            BASELINE: "baseline_process",
            CANDIDATE: "candidate_process",
            CONTROL: "candidate_process",
            PROOF_SIDE: "proof_process",
        }[side]
        watched = {BASELINE: self.caches[1], CANDIDATE: self.caches[0]}.get(side)
        self.processes[side] = SandboxedProcess(
            disk_watch=(watched, self.limits.build_cache_bytes) if watched else None,
            role=module,
            view=self.views[side],
            log_path=root / f"{side}.log",
            memory_bytes=memory_for(CANDIDATE if side == CONTROL else side, self.limits),
            callsite_dir=callsite_dir,
            extra_env={**device_env, **(extra_env or {})},
            pass_fds=tuple(pass_fds),
            allow_unconfined=allow,
            processes=self.limits.processes,
            open_files=self.limits.open_files,
            file_size_bytes=self.limits.file_size_bytes,
        )

    def path(self, side: str, name: str) -> str:
        """Where a source file appears to one process."""
        return self.views[side].path(self.root / "sources" / name)

    def start_up(self) -> None:
        """torch's import and CUDA's context in every process; the device's ceilings, where none are
        kept yet, measured before any process has loaded the problem or the candidate (a problem that
        started bandwidth burners at import had the rates every later problem was judged by measured
        beside them); then the problem loads."""
        described = self.send(BASELINE, "describe", {"device": self.device, "flush_bytes": self.plan.flush_bytes})
        candidate = self.send(CANDIDATE, "describe", {"device": self.device})
        control = self.send(CONTROL, "describe", {"device": self.device}) if self.control else None
        start = self.limits.start_time_s, f"the start-up limit ({self.limits.start_time_s:.0f} s)"
        self.described = self.receive(described, *start)
        self.evidence.env = self.described["env"]
        self.receive(candidate, *start)
        if control:
            self.receive(control, *start)
        self.env_key = baseline_cache.environment_key(self.evidence.env, self.plan.flush_bytes)
        self.evidence.rates = baseline_cache.load_rates(self.cache_dir, self.env_key)
        self.evidence.device_controls = baseline_cache.load_controls(self.cache_dir, self.env_key)
        if self.evidence.rates is None and self.plan.speed_of_light and self.evidence.baselines:
            self.measure_rates()
        reference = self.send(REFERENCE, "prepare", {"device": self.device, "problem_path": self.path(REFERENCE, "problem.py")})
        proof = (
            self.send(
                PROOF_SIDE,
                "prepare",
                {
                    "device": self.device,
                    "problem_path": self.path(PROOF_SIDE, "problem.py"),
                    "proof_path": self.path(PROOF_SIDE, "proof.py"),
                },
            )
            if self.proof_source
            else None
        )
        self.receive(reference, *start)
        if proof:
            self.receive(proof, *start)

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
            baseline_cache.store_rates(self.cache_dir, self.env_key, self.evidence.rates)
        else:
            self.evidence.cost["rates_not_kept"] = "two measurements of the device's ceilings disagreed"

    def inspect_and_prepare(self, inspect: bool = True) -> None:
        """The reference process inspects the problem while the baseline process builds the baselines."""
        key = self.env_key
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

    def instantiate(self, seed: int, variant: dict | None = None, *, first: bool = False) -> None:
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

    def _control(self, stage: str, message: dict) -> None:
        """A request of the A/A control's process; its failure (the problem's own code) is the harness's."""
        reply = self.ask(CONTROL, stage, message, self.limits.build_time_s)
        if not reply.get("ok"):
            error = (reply.get("error") or {}).get("message", "no reason given")
            self.evidence.fault = Fault(
                CONTROL, stage, "harness", f"the A/A control (the reference as a candidate) failed: {error}"
            )
            raise Stop

    def call(self, who: str, phase: str, *, compare: bool = False, variant: dict | None = None, profile: bool = False) -> Call:
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
        call = Call(CANDIDATE, phase, seed, reply, wall, timing=self.read_timing(CANDIDATE, stage))
        self.evidence.calls.append(call)
        if not (call.timing["captured"] or call.timing["raised"]):
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

    def _baseline_call(self, who: str, phase: str, seed: int, variant: dict | None, profile: bool, stage: str) -> Call:
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

    def timed_ask(
        self,
        side: str,
        stage: str,
        message: dict,
        limit: float | None = None,
        limit_name: str | None = None,
        *,
        watch_idle: bool = False,
    ) -> tuple[dict, float]:
        """A request and the parent's wall time around it (ms). `watch_idle`: a baseline is being timed,
        so the candidate's process has nothing to do; what it runs meanwhile competes with the baseline
        for the host (`quiet_while_baselines_run`)."""
        idle_before = self.processes[CANDIDATE].cpu_ns() if watch_idle else 0
        reply = self.ask(side, stage, message, limit, limit_name)
        wall = self.round_trip_ms
        if watch_idle:
            self.evidence.idle["cpu_ms"] += (self.processes[CANDIDATE].cpu_ns() - idle_before) / 1e6
            self.evidence.idle["wall_ms"] += wall
        return reply, wall

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

    def steady_sides(self) -> list[str]:
        """The steady state's sides: the timed ones, and the A/A control where it runs."""
        return self.timed_sides() + ([CONTROL] if self.control else [])

    def steady(self, gpu=None, phase: str = STEADY, sides: list[str] | None = None) -> dict:
        """Rounds of bursts, each side's in shuffled order, until every speedup's interval is within
        the plan's target or its budget is spent; round 0 warms up. Calls are compared as in `time`.
        DEVICE: the same, of the sides' captured calls (`sides`), within the device-time budget."""
        from evaluation.harness import measurement
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
            self.evidence.device_time.update(self.steady(phase=DEVICE, sides=list(captured)))
            # Replays on fresh inputs that do not match the reference, from a candidate whose own calls
            # do: the graph is not the call (a launch outside the capture ran once, at capture time).
            # No device time, and no fault of the candidate's.
            if any(c.replay and c.checked and not checks.within_tolerance(c) for c in self.evidence.candidate_calls(DEVICE)):
                captured[CANDIDATE] = (
                    "its graph's replays gave other outputs than its calls on fresh inputs: some of the call's work "
                    "ran outside the capture (a raw kernel on the legacy default stream does not follow the capturing "
                    "stream) and is missing from the graph"
                )

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
        from evaluation.harness import measurement

        sides = self.timed_sides()
        samples = {side: [] for side in sides}
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
                    samples[side].append(call.ms)
            if time.monotonic() > self.deadline - 60:
                break
        self._stop_if_failed()

    def profiles(self) -> bool:
        return self.plan.profile and bool(self.evidence.baselines)

    def profile(self) -> None:
        if self.profiles():
            self.call(CANDIDATE, PROFILE, compare=True, profile=True)
            self.call("eager", PROFILE, profile=True)

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

    def _variant_call(self, variant: dict) -> None:
        try:
            self.instantiate(self.seed(), variant)
            call = self.call(CANDIDATE, VARIANT, compare=True, variant=variant)
        except Stop:
            fault, self.evidence.fault = self.evidence.fault, None
            if fault is not None and fault.kind in ("timeout", "crashed", "memory", "protocol"):
                self.evidence.fault = fault  # the process is gone; the verdict must say why
            self.evidence.variant.update(
                status="failed", detail=f"at {variant} the candidate {'failed: ' + fault.detail if fault else 'broke a rule'}"
            )
            raise
        mismatch = call.comparison.get("max_rel_error")
        if (
            call.comparison.get("shape_mismatch")
            or call.comparison.get("structure_mismatch")
            or mismatch is None
            or mismatch > call.tolerance
            or call.comparison.get("nonfinite")
        ):
            self.evidence.variant.update(
                status="failed",
                detail=f"at {variant} the output is wrong "
                f"(relative error {mismatch if mismatch is not None and math.isfinite(mismatch) else 'n/a'})",
            )
        else:
            self.evidence.variant["detail"] = f"also right at {variant} (relative error {mismatch:.2g})"

    def finish(self) -> None:
        if self.harness_tasks is not None and self.evidence.idle["quiet_windows"] < QUIET_WINDOWS:
            # The windows the draw did not place yet: the candidate thawed and idle, as after a reply.
            self._wake_candidate()
            while self.evidence.idle["quiet_windows"] < QUIET_WINDOWS:
                self.quiet_window()
        self.evidence.finished = self.ask(CANDIDATE, "finish", {})
        self.ask(REFERENCE, "finish", {})
        self.ask(BASELINE, "finish", {})

    # -- the run --------------------------------------------------------------------------------

    def run(self, steps=None) -> Verdict:
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
                side, stage = getattr(self, "last_request", (REFERENCE, "start"))
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
            baseline_cache.record_control(self.cache_dir, self.env_key, self.problem_source, own_control)
        self.progress("done")
        return verdict

    def _own_control(self) -> dict | None:
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
        self.evidence.device_controls = [c for c in self.evidence.device_controls if c["problem"] != problem] + [
            {"problem": problem, **record}
        ]
        return record

    def _steps(self) -> None:
        with self.on_device():
            with self.step("start_up"):
                self.start_up()
            self._device_steps()

    @contextlib.contextmanager
    def on_device(self):
        """The device to this verification alone, from its processes' first touch of it (CUDA's
        context) to their end: they are killed before another verification may start there."""
        self.lock = DeviceLock(self.limits.device_lock_path)
        try:
            with self.lock:
                try:
                    yield
                finally:
                    self._close()
        finally:
            self.evidence.cost["device_wait_s"] = round(self.lock.waited_s, 3)

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

    def _close(self) -> None:
        if self.closed:
            return
        self.closed = True
        # Killed, not left to exit: once `finish` is answered nothing more is wanted from any (what
        # they printed is in their logs already: line-buffered), and a process tearing down CUDA
        # takes a second. The candidate's exit handlers never run.
        for process in self.processes.values():
            process.close(0.0)
        for timing_pipe in self.timing.values():
            timing_pipe.close()
        left = {side: process.alive_members() for side, process in self.processes.items()}
        self.evidence.left_running = {side: pids for side, pids in left.items() if pids}
        candidate_process = self.processes.get(CANDIDATE)
        if candidate_process is not None:
            self.evidence.log_excerpt = candidate_process.log_tail()
            self.evidence.sandbox = {
                **candidate_process.report(),
                "reference_process": "the problem alone, in a second sandbox that never loads candidate code",
                "baseline_process": "the problem's reference timed in a third sandbox that never loads candidate code",
                "proof_process": "a hack report's proof inputs, in a sandbox of their own, reaching the others as data"
                if self.proof_source
                else None,
                "wall_time_limit_s": self.limits.wall_time_s,
                "build_time_limit_s": self.limits.build_time_s,
                "call_time_limit_s": self.call_limit()[0],
                "gpu_memory_fraction": self.limits.gpu_memory_fraction if self.device == "cuda" else None,
                "peak_resident_bytes": candidate_process.peak_resident_bytes,
                "host_memory_bytes": host_memory_bytes(),
                "processes_left_running": sum(len(p) for p in self.evidence.left_running.values()),
                # Whether nothing of it ran between its requests (its control group's freezer), and how its
                # CPU time was counted there.
                "frozen_between_requests": bool(candidate_process.can_freeze and self.evidence.idle.get("frozen")),
                "cpu_counted_by": candidate_process.cpu_counted_by,
            }
        if self.evidence.fault and self.evidence.fault.side in self.processes and self.evidence.fault.side != CANDIDATE:
            tail = self.processes[self.evidence.fault.side].log_tail()
            self.evidence.log_excerpt = (self.evidence.log_excerpt + f"\n[{self.evidence.fault.side} process]\n" + tail)[-6000:]

    def _scrub_caches(self) -> None:
        """What the sandboxes left in their build caches: no setuid or setgid bit, and no more than
        `Limits.build_cache_bytes` each (a fuller one is removed; the next run builds again)."""
        for folder in getattr(self, "caches", ()):
            total = 0
            for directory, folders, names in os.walk(folder):
                for name in folders + names:
                    path = os.path.join(directory, name)
                    try:
                        info = os.lstat(path)
                        if info.st_mode & 0o6000 and not os.path.islink(path):
                            os.chmod(path, info.st_mode & 0o1777)
                        total += build_caches.footprint(info)
                    except OSError:
                        continue
            if total > self.limits.build_cache_bytes:
                shutil.rmtree(folder, ignore_errors=True)
                self.evidence.cost.setdefault("build_caches_removed", []).append(f"{folder.name}: {total / 2**30:.1f} GiB")

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
    baselines=("eager",),
    limits=None,
    on_progress=None,
    baseline_cache_dir=None,
    proof_inputs_source: str | None = None,
    plan=None,
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


def probe(problem_source: str, *, device: str = "cpu", baseline_cache_dir, limits=None, plan=None) -> Verdict:
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


def build(problem_source: str, candidate_source: str, *, device: str = "cpu", limits=None, ahead: bool = False) -> Verdict:
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


def inspect_problem(problem_source: str, *, device: str = "cpu", limits=None) -> dict:
    """Run the problem alone, sandboxed, and report what the platform shows on the problem itself."""
    validate(device, ())
    limits = coerce(Limits, limits)
    root = Path(tempfile.mkdtemp(prefix="kernel-court-inspect-"))
    os.chmod(root, 0o755)
    judge = None
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
        return scoring.clean({k: v for k, v in report.items() if k != "nonce"})
    finally:
        if judge is not None:
            judge.close(0.0)
        shutil.rmtree(root, ignore_errors=True)
