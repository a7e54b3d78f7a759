"""One verification as its parts see it, for the type checker: `Verifying`, what the parts of
`pipeline.Verification` (process_requests.py, processes.py, calls.py, measures.py,
problem_inspection.py) use of the whole, its state and the methods one part calls on another, each
signature written here once; and the shapes of a request and its reply (`Message`, `Reply`, `Sent`).

Why: mypy cannot type a mixin's `self` as the concrete subclass that combines the parts. So each part
subclasses `Part`, which is `Verifying` to the type checker and `object` at run time (nothing runs
differently): a part's `self` has the whole's state and the other parts' methods, each part's own
methods are checked against the signatures here (as overrides), every assignment to the state against
its type here, and a `Verification` that lacks one of these methods cannot be instantiated. (Annotating
`self` with a Protocol instead does not hold: mypy still makes each `self.x = ...` in a part define `x`
on that part, typed by what it assigns, so the parts had to declare their state again.)
"""

from typing import TYPE_CHECKING, Any

# A request's fields (besides its op and nonce), and a process's reply: JSON objects of the protocol's.
Message = dict[str, Any]
Reply = dict[str, Any]
# A request sent and not yet received (`send`): its side, stage, nonce, message and the parent's clock then.
Sent = tuple[str, str, int, Message, float]

if TYPE_CHECKING:
    import contextlib
    import random
    from abc import abstractmethod
    from contextlib import AbstractContextManager
    from pathlib import Path
    from typing import Literal, NoReturn, overload

    from evaluation.harness.device_lock import DeviceLock
    from evaluation.harness.evidence import Call, CallTiming, Evidence
    from evaluation.harness.limits import Limits, Plan
    from evaluation.harness.protocol import TimingPipe
    from evaluation.harness.sandbox import SandboxedProcess
    from evaluation.harness.sandbox_command import View

    class Verifying:
        """The state the parts read and write (set in `Verification.__init__`, which says what each is)
        and the methods one part calls on another (or `Verification`'s own, `step`)."""

        # What is verified, where, and under which limits and plan.
        problem_source: str
        candidate_source: str
        proof_source: str | None
        device: str
        limits: Limits
        plan: Plan
        cache_dir: str | None
        control: bool
        ahead: bool
        # What the verification has found so far, its secret source and its end.
        evidence: Evidence
        rng: random.SystemRandom
        deadline: float
        # Its processes: their files, views and timing pipes, the device's description and lock.
        root: Path | None
        build_root: Path | None
        holds: contextlib.ExitStack
        caches: tuple[Path, ...]
        views: dict[str, View]
        processes: dict[str, SandboxedProcess]
        timing: dict[str, TimingPipe]
        described: dict[str, Any]
        env_key: dict[str, Any] | None
        lock: DeviceLock
        closed: bool
        # The candidate's process between its requests.
        frozen: bool
        idle_mark: tuple[int, float] | None
        harness_tasks: set[int] | None
        # Its requests and calls.
        round_trip_ms: float
        last_request: tuple[str, str]
        building: bool
        unchecked: int
        eager_ms: float | None
        max_output_bytes: int
        poison_outputs: bool
        ungated: set[str]

        # process_requests.ProcessRequests
        @abstractmethod
        def seed(self) -> int: ...
        @abstractmethod
        def ask(
            self, side: str, stage: str, message: Message, limit: float | None = None, limit_name: str | None = None
        ) -> Reply: ...
        @abstractmethod
        def send(self, side: str, stage: str, message: Message) -> Sent: ...
        @abstractmethod
        def receive(self, sent: Sent, limit: float | None = None, limit_name: str | None = None) -> Reply: ...
        @abstractmethod
        def timed_ask(
            self,
            side: str,
            stage: str,
            message: Message,
            limit: float | None = None,
            limit_name: str | None = None,
            *,
            watch_idle: bool = False,
        ) -> tuple[Reply, float]: ...
        @overload
        @abstractmethod
        def read_timing(self, side: str, stage: str, burst: None = None) -> CallTiming: ...
        @overload
        @abstractmethod
        def read_timing(self, side: str, stage: str, burst: int) -> tuple[list[CallTiming], CallTiming]: ...
        @abstractmethod
        def _candidate_error(self, stage: str, reply: Reply) -> NoReturn: ...
        @abstractmethod
        def _stop_if_failed(self) -> None: ...

        # processes.Processes
        @abstractmethod
        def path(self, side: str, name: str) -> str: ...
        @abstractmethod
        def _rest_candidate(self, stage: str) -> None: ...
        @abstractmethod
        def _wake_candidate(self) -> None: ...

        # calls.Calls
        @abstractmethod
        def call_limit(self) -> tuple[float, str]: ...
        @abstractmethod
        def instantiate(self, seed: int, variant: dict[str, Any] | None = None, *, first: bool = False) -> None: ...
        @abstractmethod
        def call(
            self, who: str, phase: str, *, compare: bool = False, variant: dict[str, Any] | None = None, profile: bool = False
        ) -> Call: ...
        @abstractmethod
        def compare(self, call: Call) -> None: ...

        # measures.Measures
        @abstractmethod
        def measure_rates(self) -> None: ...
        @abstractmethod
        def profiles(self) -> bool: ...

        # pipeline.Verification
        @abstractmethod
        def step(self, name: str, into: Literal["steps_s", "timing_s"] = "steps_s") -> AbstractContextManager[None]: ...

    Part = Verifying
else:
    Part = object
