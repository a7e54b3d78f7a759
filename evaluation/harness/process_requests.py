"""Talking to a verification's sandboxed processes: one request and its reply (`ask`, or `send` and
later `receive`, so that several processes work at once), held to the protocol (the nonce, the replies
each request requires, the facts' shapes), and the call site's timing records. A fault, or a reply the
protocol forbids, is recorded as evidence and ends the run (`Stop`).
"""

import secrets
import time
from typing import NoReturn, overload

from evaluation.harness import checks
from evaluation.harness.evidence import CANDIDATE, REFERENCE, CallTiming, Fault
from evaluation.harness.protocol import CANDIDATE_FACTS, REFERENCE_FACTS, REQUIRED, REQUIRED_AFTER_CALL
from evaluation.harness.sandbox import ProcessFault
from evaluation.harness.verifying import Message, Part, Reply, Sent

# The proof process's side (a hack report's proof inputs).
PROOF_SIDE = "proof"


class Stop(Exception):
    """The run ends here: a fault or a failed check decides the verdict already."""


class ProcessRequests(Part):
    """Requests to the sandboxed processes and their replies.
    A part of `pipeline.Verification`, which holds the state every part reads (its `__init__`); typed
    as the whole (verifying.Verifying)."""

    def seed(self) -> int:
        return secrets.randbelow(2**62 - 1) + 1

    def _timeout(self, limit: float) -> float:
        return max(0.1, min(limit, self.deadline - time.monotonic()))

    def ask(self, side: str, stage: str, message: Message, limit: float | None = None, limit_name: str | None = None) -> Reply:
        """One request; any fault is recorded as evidence and ends the run."""
        return self.receive(self.send(side, stage, message), limit, limit_name)

    def send(self, side: str, stage: str, message: Message) -> Sent:
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

    def receive(self, sent: Sent, limit: float | None = None, limit_name: str | None = None) -> Reply:
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

    def timed_ask(
        self,
        side: str,
        stage: str,
        message: Message,
        limit: float | None = None,
        limit_name: str | None = None,
        *,
        watch_idle: bool = False,
    ) -> tuple[Reply, float]:
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

    @overload
    def read_timing(self, side: str, stage: str, burst: None = None) -> CallTiming: ...
    @overload
    def read_timing(self, side: str, stage: str, burst: int) -> tuple[list[CallTiming], CallTiming]: ...
    def read_timing(self, side: str, stage: str, burst: int | None = None) -> CallTiming | tuple[list[CallTiming], CallTiming]:
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

    def _candidate_error(self, stage: str, reply: Reply) -> NoReturn:
        error = reply["error"]
        kind = "memory" if error.get("memory") else "exception"
        self.evidence.fault = Fault(CANDIDATE, stage, kind, error["message"], error.get("cuda", False))
        raise Stop

    def _stop_if_failed(self) -> None:
        self.unchecked = 0
        if checks.blocking_failure(self.evidence):
            raise Stop
