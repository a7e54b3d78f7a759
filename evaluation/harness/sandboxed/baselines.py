"""The baselines a candidate is timed against, built from the reference model before the
candidate loads: eager, torch.compile (default and reduce-overhead), and the eager reference
captured in a CUDA graph whose timed call includes copying the inputs into the graph's buffers.
"""

from collections.abc import Callable
from typing import Any, cast

import torch

from evaluation.harness.sandboxed import frames
from evaluation.harness.verdict import BASELINES


class Replay:
    """`model(*inputs)` captured in a CUDA graph on those very input tensors, after warm-up calls on a
    side stream (as torch asks); calling it replays the graph on what the inputs hold then, and
    returns the output tensors the graph writes."""

    def __init__(self, model: Callable[..., object], inputs: list[Any]) -> None:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                model(*inputs)
        torch.cuda.current_stream().wait_stream(stream)
        self._graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self._graph):
            self._output = model(*inputs)

    def __call__(self) -> object:
        self._graph.replay()
        return self._output


# How far a replay's output may lie from the call's own on the same inputs, relative to the output's
# largest magnitude: a reduction's order may differ between launches, a missing kernel differs wholly.
REPLAY_AGREES = 1e-3


def try_replay(
    model: Callable[..., object], inputs: list[Any], expected: list[torch.Tensor] | None = None
) -> tuple[Replay | None, str]:
    """`model` captured on `inputs` (Replay), or None and why capture failed: "captured" otherwise.
    `expected`: the tensors the call itself returned on these inputs. A graph that does not give them
    back was not the call: a launch outside the capture (a raw kernel on the legacy default stream,
    which does not follow the capturing stream) ran at capture time and is missing from the graph,
    whose replays would then be timed and compared as if they were the call. That is no fault of the
    kernel's (a PyTorch user on the default stream gets the right answer): the device time is left
    out, with the reason."""
    try:
        replay = Replay(model, inputs)
        torch.cuda.synchronize()
        if expected is not None:
            _, leaves = frames.structure_of(replay())
            torch.cuda.synchronize()
            if not _same([x for x in leaves if type(x) is torch.Tensor], expected):
                return None, (
                    "the captured graph does not give back the call's own outputs: some of its work ran outside the "
                    "capture (a raw kernel launched on the legacy default stream does not follow the capturing stream)"
                )
        return replay, "captured"
    except BaseException as exc:  # noqa: BLE001  (capture fails for some calls, and user code may raise anything)
        return None, f"{type(exc).__name__}: {str(exc)[:300]}"


def _same(leaves: list[torch.Tensor], expected: list[torch.Tensor]) -> bool:
    if len(leaves) != len(expected):
        return False
    for got, want in zip(leaves, expected, strict=True):
        if got.shape != want.shape or got.dtype != want.dtype:
            return False
        if not want.is_floating_point():
            if not torch.equal(got, want):
                return False
            continue
        scale = want.abs().max().item() if want.numel() else 0.0
        if want.numel() and not (got - want).abs().max().item() <= REPLAY_AGREES * scale + 1e-12:
            return False
    return True


class CudaGraphCall:
    """The reference replayed from a CUDA graph; inputs are copied into static buffers each call."""

    def __init__(self, model: Callable[..., object], example_inputs: list[Any]) -> None:
        self._static = [x.clone() if isinstance(x, torch.Tensor) else x for x in example_inputs]
        self.replay = Replay(model, self._static)

    def __call__(self, *inputs: object) -> object:
        for static, value in zip(self._static, inputs):
            if isinstance(static, torch.Tensor):
                static.copy_(value)
        return self.replay()


def unavailable_reason(name: str, device: str) -> str | None:
    if name not in BASELINES:
        return f"unknown baseline; known: {', '.join(BASELINES)}"
    if name == "cudagraph" and device != "cuda":
        return "CUDA graphs need a CUDA device"
    return None


def build(name: str, model: Callable[..., object], example_inputs: list[Any], device: str) -> Callable[..., object]:
    if name == "eager":
        return model
    if name == "compile":
        return cast(Callable[..., object], torch.compile(model))
    if name == "compile-ro":
        return cast(Callable[..., object], torch.compile(model, mode="reduce-overhead"))
    if name == "cudagraph":
        return CudaGraphCall(model, example_inputs)
    raise ValueError(f"unknown baseline {name!r}")
