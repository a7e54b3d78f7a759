"""The proof process: a hack reporter's proof inputs, run in a sandbox of their own.

A proof is code (a `get_inputs()` beside the problem's constants); run inside the reference
process it could change the truth itself. Here it runs alone: it generates the inputs once, from a
seed, and writes them to the reference process as data (a description and raw bytes), which then
feeds them to the candidate like any other call's inputs.
"""

import json
import struct
import sys
from typing import Any

import torch

from evaluation.harness.channel import Channel
from evaluation.harness.sandboxed import frames, inputs, loading, values
from evaluation.harness.sandboxed.request_loop import serve


class ProofProcess:
    def __init__(self, proof_fd: int):
        self.proof_fd = proof_fd

    def prepare(self, request: dict[str, Any]) -> dict[str, Any]:
        self.device = request["device"]
        if self.device == "cuda":
            torch.cuda.init()
        self.problem, self.proof = loading.load_problem(request["problem_path"], request["proof_path"])
        return {"ok": True}

    def inputs(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proof is not None  # the parent always sends the proof's path
        args = inputs.generate(self.proof, request["seed"], self.device, None, self.problem)
        spec: list[dict[str, Any]] = []
        tensors: list[torch.Tensor] = []
        for value in args:
            if isinstance(value, torch.Tensor):
                spec.append({"tensor": {"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch.")}})
                tensors.append(value)
            else:
                spec.append({"value": values.encode(value)})
        description = json.dumps(spec).encode()
        payload = struct.pack("<I", len(description)) + description + frames.tensor_bytes(tensors)
        frames.write_frame(self.proof_fd, frames.INPUTS, 0, payload)
        return {"ok": True, "bytes": len(payload)}

    def finish(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True}


_HANDLERS = {"prepare": ProofProcess.prepare, "inputs": ProofProcess.inputs, "finish": ProofProcess.finish}


def main(read_fd: int, write_fd: int, proof_fd: int) -> None:
    serve(Channel(read_fd, write_fd), _HANDLERS, ProofProcess(proof_fd))
    sys.stdout.flush()
