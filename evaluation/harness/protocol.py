"""What the parent accepts from its sandboxed processes: the fields a reply must hold, the shape of
the facts each side reports, and the call site's timing records on their own pipe.

Code of the candidate's (and a pasted problem's) runs beside the harness's in those processes and
can write anything to their pipes: a reply is a claim, and anything outside these shapes came from
somewhere other than the harness's own code (the checks `protocol_intact` and `harness_intact`).
"""

import contextlib
import hmac
import os
import secrets
import select
import socket
import struct
import time
from collections.abc import Callable
from typing import Any

from evaluation.harness.evidence import BASELINE, CANDIDATE, REFERENCE, CallTiming
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


# A field's check: whether a value a process sent is of the field's shape.
FieldCheck = Callable[[Any], bool]


def _list_of(kind: type) -> FieldCheck:
    return lambda value: isinstance(value, list) and all(isinstance(item, kind) for item in value)


# The shape of what the candidate's process reports: a reply with anything else in these fields came
# from the candidate's own code (it can rewrite the harness's Python beside it), not the harness's.
CANDIDATE_FACTS: dict[str, FieldCheck] = {
    "patched": _list_of(str),
    "new_threads": _list_of(str),
    "new_processes": _list_of(int),
    "state_changes": lambda value: isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()),
    "changed_after_capture": _list_of(int),
    "kernels": _list_of(dict),
    "work": _list_of(dict),
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


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


# The problem's code runs in the reference process and can rewrite its replies too: the figures the
# parent computes with must at least be of their kind (a pasted problem is judged by itself, but must
# not stop the harness from giving a verdict).
REFERENCE_FACTS: dict[str, FieldCheck] = {
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


# The call site's record of one call (callsite.c, TimingRecord): its fields, then a SipHash-2-4 tag of
# them under the key the parent gave that call site.
TIMING = struct.Struct("<IIQdddQddQ")
TAGGED = TIMING.size - 8
TIMING_MAGIC = 0x3354434B
TIMED_RAISED, TIMED_CAPTURED, TIMED_CUDA, TIMED_BURST, TIMED_BURST_END, TIMED_UNGATED = 2, 4, 8, 16, 32, 64
LINK_BYTES = 1 << 20
KEY_BYTES = 16


def link() -> tuple[int, int]:
    """(read end, write end) of a one-way link between two processes: a connected pair of Unix stream
    sockets. Not a pipe: a process holding one end of a pipe opens the other through /proc/self/fd and
    reads what was meant for someone else (a candidate took the call site's records off their pipe,
    rewrote them and put them back); a socket's end cannot be opened that way. Buffers as large as the
    host allows, so a burst's records never wait for their reader."""
    read, write = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    for end in (read, write):
        for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
            with contextlib.suppress(OSError):
                end.setsockopt(socket.SOL_SOCKET, option, LINK_BYTES)
    read.shutdown(socket.SHUT_WR)
    write.shutdown(socket.SHUT_RD)
    return read.detach(), write.detach()


def record_key() -> tuple[bytes, int]:
    """A fresh key for one call site's records, and a descriptor its process reads it from once, in C,
    at the call site's start (then closes); no Python object of that process ever holds it."""
    key = secrets.token_bytes(KEY_BYTES)
    read, write = os.pipe()
    os.write(write, key)
    os.close(write)
    return key, read


_MASK = 2**64 - 1


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK


def siphash(key: bytes, data: bytes) -> int:
    """SipHash-2-4 (Aumasson and Bernstein) of `data`: the records' tag, as callsite.c computes it."""
    k0, k1 = struct.unpack("<QQ", key)
    v: list[int] = [0x736F6D6570736575 ^ k0, 0x646F72616E646F6D ^ k1, 0x6C7967656E657261 ^ k0, 0x7465646279746573 ^ k1]

    def rounds(n: int) -> None:
        for _ in range(n):
            v[0] = (v[0] + v[1]) & _MASK
            v[1] = _rotl(v[1], 13) ^ v[0]
            v[0] = _rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & _MASK
            v[3] = _rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & _MASK
            v[3] = _rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & _MASK
            v[1] = _rotl(v[1], 17) ^ v[2]
            v[2] = _rotl(v[2], 32)

    whole = len(data) - len(data) % 8
    for (m,) in struct.iter_unpack("<Q", data[:whole]):
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    last = (len(data) & 0xFF) << 56 | int.from_bytes(data[whole:], "little")
    v[3] ^= last
    rounds(2)
    v[0] ^= last
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


class TimingPipe:
    """The call site's records of one process's calls, one per call, in order, each under the key
    (`record_key`) that call site holds. A record the parent did not expect (one without the key's tag,
    one more than the calls made, a sequence out of order) is a protocol fault."""

    def __init__(self, fd: int, key: bytes):
        self.fd = fd
        self.key = key
        self.calls = 0
        self.buffer = b""

    def read_many(self, count: int, timeout: float) -> list[CallTiming]:
        return [self.read(timeout, last=i == count - 1) for i in range(count)]

    def read(self, timeout: float, *, last: bool = True) -> CallTiming:
        self.calls += 1
        record = self._next(timeout)
        if record["sequence"] != self.calls or record["burst"] or record["burst_end"]:
            raise ProcessFault("protocol", "the call site's timing pipe carried a record it did not write in turn")
        if last:
            self._nothing_more()
        return record

    def read_burst(self, count: int, timeout: float) -> tuple[list[CallTiming], CallTiming]:
        """A burst's records: one per call made (`count` unless a call raised), then the burst's own."""
        records: list[CallTiming] = []
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

    def _next(self, timeout: float) -> CallTiming:
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
        magic, flags, sequence, ms, stream_ms, host_ms, modified, idle_ms, floor_ms, tag = TIMING.unpack(record)
        if magic != TIMING_MAGIC or not hmac.compare_digest(
            tag.to_bytes(8, "little"), siphash(self.key, record[:TAGGED]).to_bytes(8, "little")
        ):
            raise ProcessFault("protocol", "the call site's timing link carried a record without the call site's key: a forgery")
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
            "floor_ms": floor_ms if flags & TIMED_BURST and flags & TIMED_CUDA and not end else None,
        }

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass
