"""Everything one verification observed, gathered by the parent as the processes reply.

The checks (checks.py) read only this record; nothing here decides anything.
"""

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

from evaluation.harness.verdict import Cost, VariantCheck

CANDIDATE = "candidate"
REFERENCE = "reference"
BASELINE = "baseline"

# Phases of a candidate call. The candidate cannot tell them apart: every call is prepared,
# flushed and timed the same way.
TRIAL, WARMUP, TIMED, PROFILE, PROOF, VARIANT = "trial", "warmup", "timed", "profile", "proof", "variant"
# A call of a burst: back to back with the others of its burst (steady state; timing.py).
STEADY = "steady"
# A replay, in a burst, of the call captured in a CUDA graph (device time).
DEVICE = "device"
# The A/A control: the reference, run in a process of the candidate's shape, timed against eager.
CONTROL = "control"


@dataclass
class Fault:
    """Why a process stopped answering as it should; the run ends with it (checks.py judges whose it is)."""

    side: str  # CANDIDATE, REFERENCE, BASELINE, CONTROL or proof: whose process
    stage: str  # the request it failed: describe, prepare, inspect, load, instantiate, call, burst, feed, compare, finish
    kind: str  # exception, timeout, crashed, memory, disk, protocol or harness
    detail: str  # what happened, in words the verdict's reason quotes
    cuda: bool = False  # a CUDA error (an illegal address, say): the process's device state is lost, `crashed`


class CallTiming(TypedDict):
    """What the call site wrote to the parent about one call (protocol.TimingPipe), tagged under its key."""

    ms: float  # the call's interval: to the device drained (CUDA), or the CPU's clock
    stream_ms: float | None  # to the calling stream's end (CUDA)
    host_ms: float | None  # the host's own time inside the call (CUDA)
    raised: bool  # the call raised
    captured: bool  # its outputs were captured as it completed
    inputs_modified: list[int]  # which inputs the call wrote to
    sequence: int  # the record's number, in the order the call site wrote them
    burst: bool  # a call of a burst
    burst_end: bool  # a burst's own closing record
    ungated: bool  # the gate's watchdog had to open the gate (the call waited for the device inside)
    idle_ms: float | None  # a burst's closing record: the same synchronize again at once, on the idle device
    settle_ms: float | None  # a burst call on CUDA: its gap to the device drained, less the host's own
    floor_ms: float | None  # a burst call on CUDA: the harness's own write's gap (the host's own, above)


@dataclass
class Call:
    """One call of a side (the candidate, a baseline, the A/A control), alone or in a burst."""

    who: str  # CANDIDATE, CONTROL or a baseline's name (eager, compile, ...)
    phase: str  # TRIAL, WARMUP, TIMED, STEADY, DEVICE, PROFILE, PROOF or VARIANT
    seed: int  # the secret seed its inputs were made from
    reply: dict[str, Any]  # its process's reply: ok, and facts (the output's, threads, patched functions, ...)
    wall_ms: float  # the parent's own wall time around it (a burst's, shared out per call)
    # What the call site wrote to the parent about the call: its times, and which inputs it wrote to.
    timing: CallTiming | None = None
    reference: dict[str, Any] | None = None  # the reference process's facts beside its comparison (the spec, ...)
    comparison: dict[str, Any] | None = None  # the comparison with the reference (errors, mismatches); None if not compared
    tolerance: float | None = None  # the relative error it is held to, where compared
    # A burst's call: (round, index in its burst); round 0 warms up and is not a sample.
    burst: tuple[int, int] | None = None

    @property
    def ms(self) -> float | None:
        return self._number("ms")

    @property
    def replay(self) -> bool:
        """A replay of the call captured in a CUDA graph (device time), not a call of the model: what it
        returns shows whether the graph is the call, not whether the candidate is right."""
        return self.phase == DEVICE and self.burst is not None

    def _number(self, name: str) -> float | None:
        source: Mapping[str, object] = self.timing if self.timing is not None else self.reply
        value = source.get(name)
        return value if isinstance(value, (int, float)) else None

    @property
    def inputs_modified(self) -> list[int]:
        modified = self.timing.get("inputs_modified") if self.timing else None
        return list(modified or [])

    @property
    def stream_ms(self) -> float | None:
        """To the calling stream's end rather than the device-wide one (CUDA only; see timing.py)."""
        return self._number("stream_ms")

    @property
    def host_ms(self) -> float | None:
        """The host's own time inside the call (CUDA only; see timing.py)."""
        return self._number("host_ms")

    @property
    def checked(self) -> bool:
        return self.comparison is not None


class Burst(TypedDict):
    """One burst of one side's calls back to back (callsite.c, burst), as the parent recorded it."""

    who: str  # CANDIDATE, CONTROL or a baseline's name
    phase: str  # STEADY (calls) or DEVICE (replays of a captured graph)
    round: int  # its round; 0 warms up
    calls: int  # how many calls it made
    wall_ms: float  # the parent's wall time around the request
    sum_ms: float | None  # the sum of its calls' times, as the call site wrote them
    host_ms: float | None  # the host's own time inside them (CUDA)
    leftover_ms: float  # the host's wait in its closing synchronize: what the device still had to do
    idle_sync_ms: float | None  # that synchronize again at once, on the idle device (the host's own share)
    gated: bool  # its calls waited behind the gate (CUDA, and the side not ungated)
    gate_forced: int  # how many calls the gate's watchdog had to open


class Idle(TypedDict):
    """The candidate's sandbox between its own requests (processes._rest_candidate)."""

    cpu_ms: float  # its CPU time while baselines were timed
    wall_ms: float  # those baseline calls' wall time
    between_cpu_ms: float  # its CPU time from each reply to its freeze
    between_wall_ms: float  # the wall time from each reply to its next request
    quiet_windows: int  # how many quiet windows watched it (QUIET_WINDOWS at most)
    quiet_wall_ms: float  # their wall time
    quiet_cpu_ms: float  # its CPU time in them
    frozen: NotRequired[bool]  # whether it was frozen at every rest (its control group's freezer)
    busy_threads: NotRequired[list[str]]  # threads not the harness's own that ran in a quiet window


class SteadyRun(TypedDict, total=False):
    """How a burst measure's sampling ended (measures.steady)."""

    rounds: int  # rounds after the warm-up
    stopped_by: str  # interval, budget, rounds or wall limit
    most_calls_per_burst: int  # the most calls a burst made
    seconds: float  # its wall time


class DeviceTimeRun(SteadyRun, total=False):
    """The device time's sampling (measures.device_time)."""

    captured: dict[str, str]  # per side: "captured", or why its call could not be captured in a graph


class GpuState(TypedDict, total=False):
    """The GPU's state around the steady state (gpu_state.py), where NVML reads it."""

    clocks: str  # whether the SM clock was locked, and how
    before: dict[str, Any]  # clocks, temperature, power and throttle reasons before
    after: dict[str, Any]  # the same after
    warm_rounds: int  # how many warm-up rounds the SM clock took to settle


class DeviceControl(TypedDict):
    """One kept A/A control of the device (baseline_cache.load_controls)."""

    problem: str  # the sha256 of the problem's source
    log_ratio: float  # ln of its speedup (1.0 reads 0)
    within: float  # its rounds' own standard error, on the log scale
    off: bool  # its interval lay wholly beyond 1.01 either way
    call_ms: float | None  # its call's length (the spread depends on it)
    at: float  # when it was kept (Unix time)


@dataclass
class Evidence:
    """Everything one verification observed; the checks and the verdict read only this."""

    device: str  # cpu or cuda
    baselines: tuple[str, ...]  # the baselines asked for (verdict.BASELINES' names)
    static: dict[str, Any] = field(default_factory=dict)  # the candidate's source read without running it (static_analysis)
    problem: dict[str, Any] | None = None  # the reference process's inspection
    env: dict[str, Any] | None = None  # the device and software, as the baseline process described them
    prepared: dict[str, Any] | None = None  # the baseline process's preparation: each baseline's state, build times
    loaded: dict[str, Any] | None = None  # the candidate process's reply to loading the candidate, with its facts
    instantiations: list[dict[str, Any]] = field(default_factory=list)  # its replies to each ModelNew built
    calls: list[Call] = field(default_factory=list)  # every call of every side, in order
    finished: dict[str, Any] | None = None  # the candidate process's reply to `finish`, with its last facts
    fault: Fault | None = None  # why a process stopped answering as it should, where one did
    protocol: list[str] = field(default_factory=list)  # what the candidate's process sent unasked
    variant: VariantCheck | None = None  # the check at other sizes
    cached_baselines: dict[str, Any] = field(default_factory=dict)  # baselines' timings kept from earlier runs, by name
    rates: dict[str, Any] | None = None  # the device's measured ceilings (bandwidth, matrix rates), kept per device
    sandbox: dict[str, Any] = field(default_factory=dict)  # what confined the candidate (SandboxedProcess.report)
    log_excerpt: str = ""  # the end of the candidate's log (and a failed process's)
    cost: Cost = field(default_factory=lambda: Cost())  # where the wall time went
    # The candidate's sandbox between its own requests (processes._rest_candidate): its CPU time while
    # baselines were timed (`cpu_ms` in `wall_ms`), from each reply to its freeze (`between_*`), in the
    # quiet windows, and the threads not the harness's own that ran in them; whether it was frozen.
    idle: Idle = field(
        default_factory=lambda: Idle(
            cpu_ms=0.0,
            wall_ms=0.0,
            between_cpu_ms=0.0,
            between_wall_ms=0.0,
            quiet_windows=0,
            quiet_wall_ms=0.0,
            quiet_cpu_ms=0.0,
        )
    )
    # Host PIDs of sandboxed processes still alive after the verification closed them, per side.
    left_running: dict[str, list[int]] = field(default_factory=dict)
    # Why the problem was refused before any process started.
    refused: str | None = None
    # Why no process started: the OS sandbox is missing and the caller requires it.
    unconfined: str | None = None
    # One record per burst: who, round, calls, the parent's wall time, the sum of its calls' times and
    # `leftover_ms`, what the device still had to do once the calling stream was done (callsite.c).
    bursts: list[Burst] = field(default_factory=list)
    # How the steady-state sampling ended: rounds, and why it stopped.
    steady: SteadyRun = field(default_factory=lambda: SteadyRun())
    # The device time: which sides' calls were captured in a CUDA graph (or why not), and how its
    # sampling ended.
    device_time: DeviceTimeRun = field(default_factory=lambda: DeviceTimeRun())
    # The GPU's clocks, temperature and power state around the measurements (gpu_state.py).
    gpu: GpuState = field(default_factory=lambda: GpuState())
    # This device's kept A/A controls (its probes'), the latest of each problem, oldest first
    # (baseline_cache.load_controls): its spread between processes, and whether it last read off 1.0.
    device_controls: list[DeviceControl] = field(default_factory=list)

    def candidate_calls(self, *phases: str) -> list[Call]:
        return [c for c in self.calls if c.who == CANDIDATE and (not phases or c.phase in phases)]

    def _wake_up_ms(self, who: str) -> float | None:
        gaps = [
            c.ms - c.stream_ms
            for c in self.calls
            if c.who == who and c.phase in (WARMUP, TIMED) and c.ms is not None and c.stream_ms is not None
        ]
        return statistics.median(gaps) if gaps else None

    def wake_up_ms(self) -> float | None:
        """The harness's own time inside each device-wide interval: the host waking up after the
        synchronize. The median over the eager baseline's calls, which run on the calling stream only."""
        return self._wake_up_ms("eager")

    def timed_samples(self, who: str) -> list[float]:
        """The timed calls of one side, each the device-wide interval less the harness's wake-up,
        never below the calling stream's own interval (a lower bound of any call). A side whose own
        gaps are smaller (a call whose device went idle before its host returned) has its own median
        taken off instead: never more than eager's, so work left on another stream, which widens the
        gap, cannot widen what is taken off."""
        calls = [(c.ms, c.stream_ms) for c in self.calls if c.who == who and c.phase == TIMED and c.ms is not None]
        eager = self.wake_up_ms()
        if eager is None:
            return [ms for ms, _ in calls]
        own = self._wake_up_ms(who)
        wake_up = min(eager, own) if own is not None else eager
        return [ms if stream_ms is None else max(stream_ms, ms - wake_up) for ms, stream_ms in calls]

    def steady_rounds(self, who: str, phase: str = STEADY) -> dict[int, list[float]]:
        """One side's samples of a burst measure (the steady state, or the device time) by round, the
        warm-up round left out."""
        rounds: dict[int, list[float]] = {}
        for c in self.calls:
            if c.who == who and c.phase == phase and c.burst and c.burst[0] > 0 and c.ms is not None:
                rounds.setdefault(c.burst[0], []).append(c.ms)
        return rounds

    def steady_samples(self, who: str, phase: str = STEADY) -> list[float]:
        return [ms for samples in self.steady_rounds(who, phase).values() for ms in samples]

    def settle_ms(self, who: str, phase: str, gap: Literal["settle_ms", "floor_ms"] = "settle_ms") -> list[float]:
        """One side's burst calls' gaps from their end to the device drained, less the host's own share
        (callsite.c, `settled` and `floor`); `floor_ms`: that share itself, the harness's own write's gap."""
        return [
            settle
            for c in self.calls
            if c.who == who and c.phase == phase and c.timing and (settle := c.timing.get(gap)) is not None
        ]

    def host_ms(self, who: str) -> float | None:
        """The median of the host's own time inside one side's timed calls (CUDA only)."""
        times = [c.host_ms for c in self.calls if c.who == who and c.phase == TIMED and c.host_ms is not None]
        return statistics.median(times) if times else None

    def candidate_replies(self) -> list[dict[str, Any]]:
        """Every reply that carries facts read after candidate code ran."""
        replies = [self.loaded] if self.loaded else []
        replies += self.instantiations
        replies += [c.reply for c in self.candidate_calls()]
        if self.finished:
            replies.append(self.finished)
        return replies

    def expected_spec(self) -> list[dict[str, Any]]:
        spec: list[dict[str, Any]] = (self.problem or {}).get("spec", [])
        return spec
