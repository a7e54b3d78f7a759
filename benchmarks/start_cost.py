"""Where a verification's first seconds go, inside one process (issue 15, cost): importing torch,
opening CUDA, and the reference process's prepare, instantiate and inspect, the last under cProfile.
Run outside the sandbox, on the harness's own classes, with no channel.

    python benchmarks/start_cost.py --task L2T9
Plain Python (no Django); prints the steps' seconds and the profile's top functions.
"""

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", required=True)
    args = parser.parse_args()
    marks = [("start", time.monotonic())]
    import torch

    marks.append(("import torch", time.monotonic()))
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    marks.append(("cuda context", time.monotonic()))
    import harness_cuda_l1 as cuda_l1

    from evaluation.harness.sandboxed import reference_process

    marks.append(("import harness", time.monotonic()))
    row = {cuda_l1.key(r): r for r in cuda_l1.entries()}[args.task]
    problem = Path("/tmp") / f"{args.task}_problem.py"
    problem.write_text(row["ref_code"])
    process = reference_process.ReferenceProcess(-1, -1, -1, -1, -1)
    process.prepare({"device": "cuda", "problem_path": str(problem)})
    marks.append(("prepare", time.monotonic()))
    profiler = cProfile.Profile()
    for name, seeds in (("inspect", [1, 2, 3]), ("inspect again", [4, 5, 6])):
        if name == "inspect":
            profiler.enable()
        process.inspect({"trial_seed": seeds[0], "seeds": seeds[1:], "count_flops": False})
        torch.cuda.synchronize()
        profiler.disable()
        marks.append((name, time.monotonic()))
    for (_, before), (name, after) in zip(marks, marks[1:]):
        print(f"{args.task} {name}: {after - before:.3f} s")
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(30)
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(15)
    print(text.getvalue())


if __name__ == "__main__":
    main()
