"""What the parent accepts from its sandboxed processes: the fields a reply must hold, the shape of
the facts each side reports, and the call site's timing records on their own pipe.

Code of the candidate's (and a pasted problem's) runs beside the harness's in those processes and
can write anything to their pipes: a reply is a claim, and anything outside these shapes came from
somewhere other than the harness's own code (the checks `protocol_intact` and `harness_intact`).
"""

import fcntl
import os
import select
import struct
import time

from evaluation.harness.evidence import BASELINE, CANDIDATE, REFERENCE
from evaluation.harness.sandbox import ProcessFault

# What a reply must hold to be a reply at all; anything else came from somewhere else.
REQUIRED = {
    (BASELINE, "describe"): ("env", "flush_bytes"),
    (BASELINE, "prepare"): ("baselines",),
    (CANDIDATE, "load"): ("ok",),
    (CANDIDATE, "instantiate"): ("ok",),
    (CANDIDATE, "burst"): ("calls",),
    (REFERENCE, "inspect"): ("spec", "flops"),
    (REFERENCE, "feed_burst"): ("inputs",),
    (REFERENCE, "feed"): ("inputs",),
    (REFERENCE, "compare"): ("comparison", "spec"),
    (REFERENCE, "instantiate"): ("init",),
}
REQUIRED_AFTER_CALL = ("output", "changed_after_capture")


def _list_of(kind):
    return lambda value: isinstance(value, list) and all(isinstance(item, kind) for item in value)


# The shape of what the candidate's process reports: a reply with anything else in these fields came
# from the candidate's own code (it can rewrite the harness's Python beside it), not the harness's.
CANDIDATE_FACTS = {
    "patched": _list_of(str),
    "new_threads": _list_of(str),
    "new_processes": _list_of(int),
    "state_changes": lambda value: isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()),
    "changed_after_capture": _list_of(int),
    "kernels": _list_of(dict),
    "output": lambda value: (
        isinstance(value, dict)
        and isinstance(value.get("structure"), str)
        and _list_of(dict)(value.get("leaves"))
        and len(value["leaves"]) <= 4096
    ),
    "error": lambda value: isinstance(value, dict) and isinstance(value.get("message"), str),
    # A burst's calls: each with its output's facts, or none at all (replays of a CUDA graph, whose output
    # is the graph's own memory each time); `burst` checks which the parent asked for.
    "calls": lambda value: (
        isinstance(value, list)
        and len(value) <= 4096
        and all(isinstance(call, dict) and (call == {} or CANDIDATE_FACTS["output"](call.get("output"))) for call in value)
    ),
    "graph": lambda value: isinstance(value, str) and len(value) <= 400,
}


def _count(value) -> bool:
    return type(value) is int and value >= 0


# The problem's code runs in the reference process and can rewrite its replies too: the figures the
# parent computes with must at least be of their kind (a pasted problem is judged by itself, but must
# not stop the harness from giving a verdict).
REFERENCE_FACTS = {
    "output_bytes": _count,
    "input_bytes": _count,
    "bytes": _count,
    "parameter_bytes": _count,
    "flops": lambda value: value is None or _count(value),
    "structure": lambda value: isinstance(value, str),
    "spec": _list_of(dict),
    "output_facts": _list_of(dict),
    "inputs": _list_of(dict),
    "init": lambda value: isinstance(value, dict),
    "comparison": lambda value: isinstance(value, dict),
    "float32_error": lambda value: isinstance(value, dict),
}


# The call site's record of one call (callsite.c, TimingRecord).
TIMING = struct.Struct("<IIQdddQd")
TIMING_MAGIC = 0x3154434B
TIMED_RAISED, TIMED_CAPTURED, TIMED_CUDA, TIMED_BURST, TIMED_BURST_END, TIMED_UNGATED = 2, 4, 8, 16, 32, 64
PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = 1031


def pipe() -> tuple[int, int]:
    """A pipe whose buffer holds a burst's records, so the call site never waits on the parent."""
    read, write = os.pipe()
    try:
        fcntl.fcntl(write, _F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass
    return read, write


class TimingPipe:
    """The call site's records of one process's calls, one per call, in order. A record the parent
    did not expect (one more than the calls made, a sequence out of order) is a protocol fault."""

    def __init__(self, fd: int):
        self.fd = fd
        self.calls = 0
        self.buffer = b""

    def read_many(self, count: int, timeout: float) -> list[dict]:
        return [self.read(timeout, last=i == count - 1) for i in range(count)]

    def read(self, timeout: float, *, last: bool = True) -> dict:
        self.calls += 1
        record = self._next(timeout)
        if record["sequence"] != self.calls or record["burst"] or record["burst_end"]:
            raise ProcessFault("protocol", "the call site's timing pipe carried a record it did not write in turn")
        if last:
            self._nothing_more()
        return record

    def read_burst(self, count: int, timeout: float) -> tuple[list[dict], dict]:
        """A burst's records: one per call made (`count` unless a call raised), then the burst's own."""
        records = []
        while True:
            record = self._next(timeout)
            if record["burst_end"]:
                if record["sequence"] != self.calls or not records:
                    raise ProcessFault("protocol", "the call site's timing pipe closed a burst it had not written")
                break
            self.calls += 1
            if record["sequence"] != self.calls or not record["burst"] or len(records) == count:
                raise ProcessFault("protocol", "the call site's timing pipe carried a record it did not write in turn")
            records.append(record)
        if len(records) < count and not records[-1]["raised"]:
            raise ProcessFault("protocol", f"the call site made {len(records)} calls of a burst of {count}")
        self._nothing_more()
        return records, record

    def _nothing_more(self) -> None:
        if self.buffer or select.select([self.fd], [], [], 0)[0]:
            raise ProcessFault("protocol", "the call site's timing pipe carried more records than calls were made")

    def _next(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while len(self.buffer) < TIMING.size:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.fd], [], [], max(0.0, left))
            if not ready:
                raise ProcessFault("protocol", "the call site wrote no times for a call")
            chunk = os.read(self.fd, 4096)
            if not chunk:
                raise ProcessFault("protocol", "the call site's timing pipe closed")
            self.buffer += chunk
        record, self.buffer = self.buffer[: TIMING.size], self.buffer[TIMING.size :]
        magic, flags, sequence, ms, stream_ms, host_ms, modified, idle_ms = TIMING.unpack(record)
        if magic != TIMING_MAGIC:
            raise ProcessFault("protocol", "the call site's timing pipe carried a record it did not write in turn")
        end = bool(flags & TIMED_BURST_END)
        return {
            "ms": ms,
            "stream_ms": stream_ms if flags & TIMED_CUDA or end else None,
            "host_ms": host_ms if flags & TIMED_CUDA or end else None,
            "raised": bool(flags & TIMED_RAISED),
            "captured": bool(flags & TIMED_CAPTURED),
            "inputs_modified": [i for i in range(64) if modified >> i & 1],
            "sequence": sequence,
            "burst": bool(flags & TIMED_BURST),
            "burst_end": end,
            "ungated": bool(flags & TIMED_UNGATED),
            "idle_ms": idle_ms if end else None,
            "settle_ms": idle_ms if flags & TIMED_BURST and flags & TIMED_CUDA and not end else None,
        }

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass
