"""Starting and stopping a verification's sandboxed processes: their build caches, sources, views,
links and record keys (`start`), torch's import and the device's description (`start_up`), the
device's lock (`on_device`), their end (`_close`, `_scrub_caches`); and the candidate's process between
its requests, frozen (`_rest_candidate`) or watched while idle (`quiet_window`).
"""

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from hashlib import sha256
from pathlib import Path
from typing import TypedDict, cast

from evaluation.harness import baseline_cache, build_caches, callsite
from evaluation.harness.device_lock import DeviceLock
from evaluation.harness.evidence import BASELINE, CANDIDATE, CONTROL, REFERENCE, DeviceControl
from evaluation.harness.limits import host_memory_bytes, memory_for
from evaluation.harness.process_requests import PROOF_SIDE
from evaluation.harness.protocol import TimingPipe, link, record_key
from evaluation.harness.sandbox import SandboxedProcess
from evaluation.harness.sandbox_command import HOME, View
from evaluation.harness.sandbox_host import bytecode_cache, sandbox_owner
from evaluation.harness.verifying import Part

# Quiet windows: after replies drawn at random (after these requests), the candidate is left idle and
# unfrozen for QUIET_WINDOW_S and watched, QUIET_WINDOWS times a verification; a thread of its own that
# ran more than QUIET_THREAD_MS then was working between calls.
QUIET_AFTER = ("instantiate", "call", "burst", "graph")
QUIET_WINDOWS, QUIET_WINDOW_S, QUIET_CHANCE, QUIET_THREAD_MS = 3, 0.03, 1 / 8, 1.0


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


class _SpawnCommon(TypedDict):
    """What every process of a verification is spawned with (`Processes._spawn`)."""

    device_env: dict[str, str]
    root: Path
    callsite_dir: Path
    allow: bool


class Processes(Part):
    """The sandboxed processes' start, rest and end.
    A part of `pipeline.Verification`, which holds the state every part reads (its `__init__`); typed
    as the whole (verifying.Verifying)."""

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
        common: _SpawnCommon = {"device_env": common_env, "root": root, "callsite_dir": callsite_dir, "allow": allow}
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
        pass_fds: tuple[int, ...],
        device_env: dict[str, str],
        root: Path,
        callsite_dir: Path,
        allow: bool,
        extra_env: dict[str, str] | None = None,
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
        assert self.root is not None  # made by `run` before any process starts
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
        # The records `pipeline.Verification._own_control` kept: each a DeviceControl's fields.
        self.evidence.device_controls = cast(list[DeviceControl], baseline_cache.load_controls(self.cache_dir, self.env_key))
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

    @contextlib.contextmanager
    def on_device(self) -> Iterator[None]:
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
        for folder in self.caches:
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
