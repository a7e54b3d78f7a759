"""Frames on the pipes between the call site (callsite.c) and the reference process.

Per candidate call the call site writes READY, the reference process answers with the call's
INPUTS (raw bytes of the input tensors, in order), and the call site writes OUTPUTS: what the call
returned, captured as it completed. In a burst the call site writes READY before each call and the
reference process answers the one after the burst's last call with END; the OUTPUTS of the burst's
calls follow, in order, once the device has finished them. The reference process reads every frame (the candidate's process
may have written some itself) and treats each as a claim: sizes are bounded, kinds must come in
order, and anything else is a protocol fault.

The OUTPUTS payload is a tree of records, each a one-byte tag:
    T tensor: u8 dlpack code, u8 bits, u8 device, u8 ndim, i64 shape[ndim], i64 strides[ndim],
      u64 address of element 0, u64 n, then n bytes (the elements, row-major)
    F float64, I int64, B bool (u8), N None
    ( tuple (subclasses too) and [ list: u32 count, then the items;  { dict: u32 count, then per item
    a key (K a string, J an integer in decimal) and its value
    K, J, O other type, X not captured, E the call raised: u32 n, then n bytes of UTF-8
"""

import os
import struct
from dataclasses import dataclass
from typing import Any

import torch

MAGIC = 0x3146434B
READY, INPUTS, OUTPUTS, END = 1, 2, 3, 4
HEADER = struct.Struct("<IIQQ")
KIND_NAMES = {READY: "ready", INPUTS: "inputs", OUTPUTS: "outputs", END: "end"}

# DLPack (code, bits) -> torch dtype. Codes: 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool.
_DTYPES = {
    (0, 8): torch.int8,
    (0, 16): torch.int16,
    (0, 32): torch.int32,
    (0, 64): torch.int64,
    (1, 8): torch.uint8,
    (1, 16): torch.uint16,
    (1, 32): torch.uint32,
    (1, 64): torch.uint64,
    (2, 16): torch.float16,
    (2, 32): torch.float32,
    (2, 64): torch.float64,
    (4, 16): torch.bfloat16,
    (5, 64): torch.complex64,
    (5, 128): torch.complex128,
    (6, 8): torch.bool,
}


class FrameError(Exception):
    """Bytes on a pipe that are not the frame the protocol expects."""


def read_exactly(fd: int, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 22))
        if not chunk:
            raise FrameError(f"the pipe closed with {left} of {n} bytes unread")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, max_length: int) -> tuple[int, int, bytes]:
    """(kind, sequence, payload) of the next frame, refusing anything malformed or too large."""
    magic, kind, length, sequence = HEADER.unpack(read_exactly(fd, HEADER.size))
    if magic != MAGIC or kind not in KIND_NAMES:
        raise FrameError("bytes that are not a frame of the call site")
    if length > max_length:
        raise FrameError(f"a frame of {length} bytes, beyond the {max_length} expected")
    return kind, sequence, read_exactly(fd, length) if length else b""


def write_frame(fd: int, kind: int, sequence: int, payload: bytes | bytearray | memoryview) -> None:
    view = memoryview(HEADER.pack(MAGIC, kind, len(payload), sequence) + bytes(payload)) if len(payload) < 1 << 16 else None
    if view is None:
        _write_all(fd, memoryview(HEADER.pack(MAGIC, kind, len(payload), sequence)))
        view = memoryview(payload)
    _write_all(fd, view)


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        written = os.write(fd, view[: 1 << 22])
        view = view[written:]


def tensor_bytes(tensors: list[torch.Tensor]) -> bytes:
    """The raw bytes of contiguous CPU copies of `tensors`, concatenated (an INPUTS payload)."""
    parts = []
    for tensor in tensors:
        host = tensor.detach().to("cpu").contiguous()
        parts.append(host.reshape(-1).view(torch.uint8).numpy().tobytes() if host.numel() else b"")
    return b"".join(parts)


@dataclass
class Captured:
    """One leaf of a captured output: a tensor (on the CPU), a Python number, None, or what it was."""

    kind: str  # tensor, float, int, bool, none, other, uncaptured
    value: object = None
    note: str = ""
    strides: tuple[int, ...] = ()
    address: int = 0
    device: str = ""


class _Reader:
    def __init__(self, payload: bytes):
        self.data = memoryview(payload)
        self.at = 0

    def take(self, n: int) -> memoryview:
        if self.at + n > len(self.data):
            raise FrameError("an outputs frame that ends mid-record")
        part = self.data[self.at : self.at + n]
        self.at += n
        return part

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size))

    def text(self) -> str:
        (n,) = self.unpack("<I")
        return bytes(self.take(n)).decode("utf-8", errors="replace")


def parse_outputs(payload: bytes) -> tuple[str, list[Captured], str | None]:
    """(structure like "tuple[T,F]", the leaves in order, the call's failure if it raised)."""
    reader = _Reader(payload)
    leaves: list[Captured] = []
    if payload[:1] == b"E":
        reader.take(1)
        return "raised", [], reader.text()
    structure = _parse(reader, leaves, 0)
    if reader.at != len(payload):
        raise FrameError("bytes after the outputs record")
    return structure, leaves, None


def _parse(reader: _Reader, leaves: list[Captured], depth: int) -> str:
    if depth > 40:
        raise FrameError("an outputs frame nested too deeply")
    tag = bytes(reader.take(1))
    if tag == b"T":
        code, bits, device, ndim = reader.unpack("<BBBB")
        shape = reader.unpack(f"<{ndim}q")
        strides = reader.unpack(f"<{ndim}q")
        if any(n < 0 for n in shape):
            raise FrameError("a tensor record with a negative size")
        address, nbytes = reader.unpack("<QQ")
        dtype = _DTYPES.get((code, bits))
        raw = reader.take(nbytes)
        numel = 1
        for n in shape:
            numel *= n
        if dtype is None:
            leaves.append(
                Captured("uncaptured", note=f"a tensor of an element type the harness does not compare (DLPack {code}/{bits})")
            )
            return "T"
        itemsize = torch.empty(0, dtype=dtype).element_size()
        if numel * itemsize != nbytes:
            raise FrameError("a tensor record whose bytes do not match its shape")
        flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
        value = flat.view(dtype).reshape(shape) if nbytes else torch.empty(shape, dtype=dtype)
        leaves.append(Captured("tensor", value, strides=strides, address=address, device="cuda" if device == 2 else "cpu"))
        return "T"
    if tag == b"F":
        leaves.append(Captured("float", reader.unpack("<d")[0]))
        return "F"
    if tag == b"I":
        leaves.append(Captured("int", reader.unpack("<q")[0]))
        return "I"
    if tag == b"B":
        leaves.append(Captured("bool", bool(reader.unpack("<B")[0])))
        return "B"
    if tag == b"N":
        leaves.append(Captured("none"))
        return "N"
    if tag in (b"(", b"["):
        (count,) = reader.unpack("<I")
        parts = [_parse(reader, leaves, depth + 1) for _ in range(count)]
        return f"{'tuple' if tag == b'(' else 'list'}[{','.join(parts)}]"
    if tag == b"{":
        (count,) = reader.unpack("<I")
        parts = []
        for _ in range(count):
            kind = bytes(reader.take(1))
            if kind not in (b"K", b"J"):
                raise FrameError("a dict record without its key")
            text = reader.text()
            key = repr(text) if kind == b"K" else text  # J: an integer key, in decimal
            parts.append(f"{key}:{_parse(reader, leaves, depth + 1)}")
        return "dict{" + ",".join(parts) + "}"
    if tag == b"O":
        name = reader.text()
        leaves.append(Captured("other", note=name))
        return f"other:{name}"
    if tag == b"X":
        note = reader.text()
        leaves.append(Captured("uncaptured", note=note))
        return "X"
    raise FrameError(f"an unknown record {tag!r} in an outputs frame")


def structure_of(value: object) -> tuple[str, list[Any]]:
    """The same structure string and leaves for a value in this process (the reference's output)."""
    # Tensors, or the plain values in their place: Any, as a `type(x) is torch.Tensor` test cannot narrow
    # an object while mypy does not follow torch.
    leaves: list[Any] = []
    return _structure(value, leaves), leaves


def _structure(value: object, leaves: list[object]) -> str:
    if type(value) is torch.Tensor:
        leaves.append(value)
        return "T"
    if isinstance(value, tuple) or type(value) is list:
        # Tuple subclasses (torch.return_types, named tuples) as tuples, read as the call site reads them.
        kind = "tuple" if isinstance(value, tuple) else "list"
        items = tuple.__iter__(value) if isinstance(value, tuple) else value
        return f"{kind}[{','.join([_structure(item, leaves) for item in items])}]"
    if type(value) is dict:
        return "dict{" + ",".join(f"{k!r}:{_structure(v, leaves)}" for k, v in value.items()) + "}"
    if value is None:
        leaves.append(None)
        return "N"
    if type(value) is bool:
        leaves.append(value)
        return "B"
    if type(value) is float:
        leaves.append(value)
        return "F"
    if type(value) is int:
        leaves.append(value)
        return "I"
    leaves.append(value)
    return f"other:{type(value).__module__}.{type(value).__qualname__}"
