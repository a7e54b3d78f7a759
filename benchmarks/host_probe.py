"""Where do host-bound references' times move between processes? (issue 15, do_bench against itself)

do_bench's eager L2 T40 read 0.026, 0.031 and 0.081 ms in three processes on one H100 host. For a
reference that issues several launches from Python, do_bench's interval holds the host's issuing
wherever it outlasts the 256 MiB clear before the call. This probe measures, in each process:

- the CPU it runs on and the host's issuing time per call (the device held busy by a long sleep, so
  nothing waits on it: pure host cost, three times in the process);
- do_bench of the call, and of a graph replay of it (device time).

    python benchmarks/host_probe.py process --tasks L3T4,L2T40   # one process's JSON line per task
    python benchmarks/host_probe.py sweep --tasks L3T4,L2T40 --processes 6 [--pin 2,5,8]
Plain Python (no Django).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import harness_cuda_l1 as cuda_l1  # noqa: E402


def current_cpu() -> int:
    return int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[36])


def host_issue_us(model, inputs, calls: int = 200) -> float:
    """Host microseconds per call while the device is busy elsewhere: what issuing costs."""
    import torch

    torch.cuda.synchronize()
    torch.cuda._sleep(400_000_000)  # ~200 ms: longer than the host takes to queue the calls
    began = time.perf_counter()
    for _ in range(calls):
        model(*inputs)
    spent = time.perf_counter() - began
    torch.cuda.synchronize()
    return spent / calls * 1e6


def probe(row: dict) -> dict:
    import torch
    import triton.testing

    from evaluation.harness.sandboxed import baselines, loading

    problem = Path("/tmp") / f"{cuda_l1.key(row)}_problem.py"
    problem.write_text(row["ref_code"])
    module, _ = loading.load_problem(str(problem), None)
    init = loading.init_inputs(module)
    model = loading.build_model(module.Model, list(init), 1, "cuda")
    torch.manual_seed(0)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    result = {"task": cuda_l1.key(row), "cpu_start": current_cpu()}
    with torch.no_grad():
        for _ in range(5):
            model(*inputs)
        result["host_us"] = [round(host_issue_us(model, inputs), 2) for _ in range(3)]
        result["do_bench_ms"] = [
            round(triton.testing.do_bench(lambda: model(*inputs), warmup=50, rep=200, return_mode="median"), 5) for _ in range(2)
        ]
        graph = baselines.CudaGraphCall(model, inputs)
        result["graph_ms"] = round(triton.testing.do_bench(graph.replay, warmup=50, rep=200, return_mode="median"), 5)
        result["host_us_after"] = round(host_issue_us(model, inputs), 2)
    result["cpu_end"] = current_cpu()
    return result


def command_process(tasks: list[str]) -> None:
    rows = {cuda_l1.key(r): r for r in cuda_l1.entries()}
    for task in tasks:
        try:
            print(json.dumps(probe(rows[task])), flush=True)
        except Exception as exc:  # noqa: BLE001  (one task's failure is a line of its own)
            print(json.dumps({"task": task, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}), flush=True)


def command_sweep(tasks: list[str], processes: int, pin: list[int]) -> None:
    plans = [("free", None)] * processes + [("pinned", cpu) for cpu in pin]
    for index, (mode, cpu) in enumerate(plans):
        command = [sys.executable, __file__, "process", "--tasks", ",".join(tasks)]
        if cpu is not None:
            command = ["taskset", "-c", str(cpu), *command]
        loads = os.getloadavg()
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=REPO)
        for line in done.stdout.splitlines():
            if line.startswith("{"):
                print(
                    json.dumps({"process": index, "mode": mode, "pinned_cpu": cpu, "load": loads, **json.loads(line)}), flush=True
                )
        if done.returncode:
            print(json.dumps({"process": index, "mode": mode, "error": done.stderr[-600:]}), flush=True)


def summarize(path: Path) -> None:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]
    for task in sorted({r["task"] for r in records if "task" in r}):
        mine = [r for r in records if r.get("task") == task and "host_us" in r]
        print(task)
        for r in mine:
            print(
                f"  {r['mode']:6} cpu {r['cpu_start']:>3}->{r['cpu_end']:<3} host_us {r['host_us']} -> {r['host_us_after']} "
                f"do_bench {r['do_bench_ms']} graph {r['graph_ms']}"
            )
        hosts = [statistics.median(r["host_us"]) for r in mine]
        benches = [statistics.median(r["do_bench_ms"]) for r in mine]
        if hosts:
            print(
                f"  host spread {(max(hosts) - min(hosts)) / statistics.median(hosts):.1%}, "
                f"do_bench spread {(max(benches) - min(benches)) / statistics.median(benches):.1%}"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["process", "sweep", "summarize"])
    parser.add_argument("--tasks", default="L3T4,L2T40,L2T14,L3T1")
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--pin", default="")
    parser.add_argument("--file", default="")
    args = parser.parse_args()
    tasks = args.tasks.split(",")
    if args.command == "process":
        command_process(tasks)
    elif args.command == "sweep":
        command_sweep(tasks, args.processes, [int(c) for c in args.pin.split(",") if c])
    else:
        summarize(Path(args.file))


if __name__ == "__main__":
    main()
