"""The request loop both sandboxed processes run, and how an exception becomes a reported fact."""

import traceback
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from evaluation.harness.channel import Channel

_State = TypeVar("_State")
# A request's handler: given the process's state and the request, its reply.
Handler = Callable[[_State, dict[str, Any]], dict[str, Any]]


def error_facts(exc: BaseException) -> dict[str, Any]:
    text = f"{type(exc).__name__}: {exc}"
    lowered = text.lower()
    return {
        "type": type(exc).__name__,
        "message": text[:2000],
        "traceback": "".join(traceback.format_exception(exc))[-3000:],
        "cuda": "cuda error" in lowered
        or "illegal memory access" in lowered
        or "device-side assert" in lowered
        or type(exc).__name__ == "AcceleratorError",
        "memory": isinstance(exc, MemoryError) or "out of memory" in lowered or "can't allocate memory" in lowered,
    }


def serve(channel: Channel, handlers: Mapping[str, Handler[_State]], state: _State) -> None:
    """Answer requests until `finish`; an exception in the harness's own code is reported, not hidden."""
    while True:
        request = channel.receive()
        op: Any = request.get("op")  # the parent's JSON: an op without a handler raises KeyError, replied as any failure
        try:
            reply = handlers[op](state, request)
        except BaseException as exc:  # noqa: BLE001  (every failure is a reply; the parent decides)
            reply = {"ok": False, "harness_error": error_facts(exc)}
        reply["nonce"] = request.get("nonce")
        channel.send(reply)
        if op == "finish":
            return
