"""Everything one verification observed, gathered by the parent as the processes reply.

The checks (checks.py) read only this record; nothing here decides anything.
"""

import statistics
from dataclasses import dataclass, field

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
    side: str  # CANDIDATE, REFERENCE, BASELINE or proof
    stage: str  # describe, prepare, inspect, load, instantiate, call, feed, compare, forget, finish
    kind: str  # exception, timeout, crashed, memory, protocol, harness
    detail: str
    cuda: bool = False


@dataclass
class Call:
    who: str
    phase: str
    seed: int
    reply: dict
    wall_ms: float
    # What the call site wrote to the parent about the call: its times, and which inputs it wrote to.
    timing: dict | None = None
    reference: dict | None = None
    comparison: dict | None = None
    tolerance: float | None = None
    # A burst's call: (round, index in its burst); round 0 warms up and is not a sample.
    burst: tuple | None = None

    @property
    def ms(self) -> float | None:
        return self._number("ms")

    @property
    def replay(self) -> bool:
        """A replay of the call captured in a CUDA graph (device time), not a call of the model: what it
        returns shows whether the graph is the call, not whether the candidate is right."""
        return self.phase == DEVICE and self.burst is not None

    def _number(self, name: str) -> float | None:
        value = (self.timing if self.timing is not None else self.reply).get(name)
        return value if isinstance(value, (int, float)) else None

    @property
    def inputs_modified(self) -> list[int]:
        return list((self.timing or {}).get("inputs_modified") or [])

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


@dataclass
class Evidence:
    device: str
    baselines: tuple
    static: dict = field(default_factory=dict)
    problem: dict | None = None  # the reference process's inspection
    env: dict | None = None
    prepared: dict | None = None
    loaded: dict | None = None
    instantiations: list[dict] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    finished: dict | None = None
    fault: Fault | None = None
    protocol: list[str] = field(default_factory=list)
    variant: dict | None = None
    cached_baselines: dict = field(default_factory=dict)
    rates: dict | None = None
    sandbox: dict = field(default_factory=dict)
    log_excerpt: str = ""
    cost: dict = field(default_factory=dict)  # wall seconds per step, and waiting for the device
    # CPU the candidate's process used while baselines were timed, and those calls' wall time.
    # The candidate's sandbox between its own requests (processes._rest_candidate): its CPU time while
    # baselines were timed (`cpu_ms` in `wall_ms`), from each reply to its freeze (`between_*`), in the
    # quiet windows, and the threads not the harness's own that ran in them; whether it was frozen.
    idle: dict = field(
        default_factory=lambda: {
            "cpu_ms": 0.0,
            "wall_ms": 0.0,
            "between_cpu_ms": 0.0,
            "between_wall_ms": 0.0,
            "quiet_windows": 0,
            "quiet_wall_ms": 0.0,
            "quiet_cpu_ms": 0.0,
        }
    )
    # Host PIDs of sandboxed processes still alive after the verification closed them, per side.
    left_running: dict = field(default_factory=dict)
    # Why the problem was refused before any process started.
    refused: str | None = None
    # Why no process started: the OS sandbox is missing and the caller requires it.
    unconfined: str | None = None
    # One record per burst: who, round, calls, the parent's wall time, the sum of its calls' times and
    # `leftover_ms`, what the device still had to do once the calling stream was done (callsite.c).
    bursts: list[dict] = field(default_factory=list)
    # How the steady-state sampling ended: rounds, and why it stopped.
    steady: dict = field(default_factory=dict)
    # The device time: which sides' calls were captured in a CUDA graph (or why not), and how its
    # sampling ended.
    device_time: dict = field(default_factory=dict)
    # The GPU's clocks, temperature and power state around the measurements (gpu_state.py).
    gpu: dict = field(default_factory=dict)
    # This device's kept A/A controls (its probes'), the latest of each problem, oldest first
    # (baseline_cache.load_controls): its spread between processes, and whether it last read off 1.0.
    device_controls: list[dict] = field(default_factory=list)

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
        calls = [c for c in self.calls if c.who == who and c.phase == TIMED and c.ms is not None]
        eager = self.wake_up_ms()
        if eager is None:
            return [c.ms for c in calls]
        own = self._wake_up_ms(who)
        wake_up = min(eager, own) if own is not None else eager
        return [c.ms if c.stream_ms is None else max(c.stream_ms, c.ms - wake_up) for c in calls]

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

    def settle_ms(self, who: str, phase: str) -> list[float]:
        """One side's burst calls' gaps from their end to the device drained, less the host's own share
        (callsite.c, `settled` and `floor`)."""
        return [
            c.timing["settle_ms"]
            for c in self.calls
            if c.who == who and c.phase == phase and (c.timing or {}).get("settle_ms") is not None
        ]

    def host_ms(self, who: str) -> float | None:
        """The median of the host's own time inside one side's timed calls (CUDA only)."""
        times = [c.host_ms for c in self.calls if c.who == who and c.phase == TIMED and c.host_ms is not None]
        return statistics.median(times) if times else None

    def candidate_replies(self) -> list[dict]:
        """Every reply that carries facts read after candidate code ran."""
        replies = [self.loaded] if self.loaded else []
        replies += self.instantiations
        replies += [c.reply for c in self.candidate_calls()]
        if self.finished:
            replies.append(self.finished)
        return replies

    def expected_spec(self) -> list[dict]:
        return (self.problem or {}).get("spec", [])
