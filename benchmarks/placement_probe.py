"""Does where a side's tensors land in memory move its steady-state time? (issue 15, repeatability)

For each task, in one process: the reference (or the candidate) is built at a fresh placement several
times (a pad of random size allocated first, then the model and its inputs), and each placement is
timed as the harness's gated burst times a call: the device held busy while the host queues the
calls (each behind a 256 MiB clear and an event pair), so the host's issuing stays out of the
intervals. If placements within a process differ as much as processes do, a process's figure is
a draw of its placement, and sampling several placements inside one verification is the cure.

    python benchmarks/placement_probe.py --tasks L3T1,L2T9 --side reference --placements 8
Plain Python (no Django); prints one JSON line per task.
"""

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import harness_cuda_l1 as cuda_l1  # noqa: E402


def gated_medians(model, inputs, calls: int, flush, read: bool = False) -> float:
    import torch

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    torch.cuda.synchronize()
    torch.cuda._sleep(60_000_000)  # ~30 ms at 1.98 GHz: longer than the host takes to queue the burst
    for i in range(calls):
        if read:  # leaves the L2 holding clean lines, nothing to write back
            flush.view(torch.int32).amax()
        else:
            flush.fill_(i & 0xFF)
        starts[i].record()
        model(*inputs)
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def probe(row: dict, side: str, placements: int, calls: int, flush_mode: str) -> dict:
    import torch

    from evaluation.harness.sandboxed import loading

    problem = Path("/tmp") / f"{cuda_l1.key(row)}_problem.py"
    problem.write_text(row["ref_code"])
    module, _ = loading.load_problem(str(problem), None)
    init = loading.init_inputs(module)
    cls = module.Model
    if side == "candidate":
        candidate = Path("/tmp") / f"{cuda_l1.key(row)}_candidate.py"
        candidate.write_text(row["custom_code"])
        cls = loading.load_module(loading.CANDIDATE_MODULE, candidate.read_text(), str(candidate)).ModelNew
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rng = random.Random()
    medians, pads = [], []
    with torch.no_grad():
        for _ in range(placements):
            pad = torch.empty(rng.randrange(0, 64 << 20), dtype=torch.uint8, device="cuda")
            if flush_mode == "moving":  # a new flush buffer for each placement
                flush = torch.empty((256 << 20) + rng.randrange(0, 8 << 20), dtype=torch.uint8, device="cuda")
            model = loading.build_model(cls, list(init), 1, "cuda")
            torch.manual_seed(0)
            inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
            for _ in range(5):
                model(*inputs)
            medians.append(gated_medians(model, inputs, calls, flush, read=flush_mode == "read"))
            pads.append(pad.numel())
            del model, inputs
            # Keep the pad: the next placement's blocks land elsewhere.
    return {
        "task": cuda_l1.key(row),
        "side": side,
        "flush": flush_mode,
        "medians_ms": [round(m, 5) for m in medians],
        "spread": round((max(medians) - min(medians)) / statistics.median(medians), 4),
        "median_ms": round(statistics.median(medians), 5),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", required=True)
    parser.add_argument("--side", default="reference", choices=["reference", "candidate"])
    parser.add_argument("--placements", type=int, default=8)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument(
        "--flush",
        default="zero",
        choices=["zero", "moving", "read"],
        help="the L2 clear: written (as do_bench and the harness), written to a new buffer per placement, or read",
    )
    args = parser.parse_args()
    rows = {cuda_l1.key(r): r for r in cuda_l1.entries()}
    for task in args.tasks.split(","):
        try:
            print(json.dumps(probe(rows[task], args.side, args.placements, args.calls, args.flush)), flush=True)
        except Exception as exc:  # noqa: BLE001  (one task's failure is a line of its own)
            print(json.dumps({"task": task, "side": args.side, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}), flush=True)


if __name__ == "__main__":
    main()
