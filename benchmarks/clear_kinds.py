"""What makes the harness read small calls lower than do_bench (issue 15): each difference between the
two ways of timing one call, switched on and off in one loop, on the same (reference, candidate) pairs.

    python benchmarks/clear_kinds.py --tasks L1T25,L2T14 --out var/clear-kinds

The harness's burst (callsite.c) and do_bench with its clear behind a ~1 ms device sleep (the host's
issuing hidden, RESULTS.md) differ in three things besides their statistics, each a factor here:

- `clear`: the L2 flush as the driver's memset (cuMemsetD8Async, the harness) or as a fill kernel on
  the SMs (`zero_`, do_bench's);
- `upload`: the call's inputs copied in from page-locked host memory just before the flush (the
  harness's fresh inputs), or left in place (do_bench's);
- `drain`: the host waits for the device after each call (the harness checks every call for hidden
  work), or calls run back to back.

Every call is behind a ~1 ms device sleep, so the host has issued it before the device reaches it, and
is timed by an event pair around it. Both sides of a pair are timed in one process, the reference
before the candidate is loaded (steady_state.py, peer). The harness's own steady state on the pair is
run beside it (steady_state.py, harness). Results: one JSON line per task in --out.
"""

import argparse
import ctypes
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import harness_cuda_l1 as cuda_l1  # noqa: E402  (after the path is set)
import steady_state  # noqa: E402

CLEAR_BYTES = 256 << 20  # do_bench's and the harness's burst flush
SLEEP_CYCLES = 2_000_000  # about 1 ms at 1.98 GHz
CALLS = 200
FACTORS = list(itertools.product(("kernel", "memset"), (False, True), (False, True)))


def _timer():
    import torch

    libcuda = ctypes.CDLL("libcuda.so.1")
    memset = libcuda.cuMemsetD8Async
    memset.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p]
    buffer = torch.empty(CLEAR_BYTES // 4, dtype=torch.int, device="cuda")

    def clear(kind: str, value: int) -> None:
        if kind == "kernel":
            buffer.zero_()
        elif memset(buffer.data_ptr(), value & 0xFF, CLEAR_BYTES, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)):
            raise RuntimeError("cuMemsetD8Async failed")

    def time_calls(fn, inputs, *, clear_kind: str, upload: bool, drain: bool) -> float:
        sources = [x.cpu().pin_memory() if isinstance(x, torch.Tensor) else None for x in inputs]
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(CALLS)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(CALLS)]
        for i in range(CALLS):
            torch.cuda._sleep(SLEEP_CYCLES)
            if upload:
                for target, source in zip(inputs, sources, strict=True):
                    if source is not None:
                        target.copy_(source, non_blocking=True)
            clear(clear_kind, i)
            starts[i].record()
            fn()
            ends[i].record()
            if drain:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))

    return time_calls


def _time_side(model, inputs) -> dict:
    import torch

    time_calls = _timer()
    result: dict = {}
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
        torch.cuda.synchronize()
        # Twice each, in a shuffled order, so a drift of the GPU's state does not pose as a factor.
        order = FACTORS * 2
        random.Random(0).shuffle(order)
        for clear_kind, upload, drain in order:
            name = f"{clear_kind}{'+upload' if upload else ''}{'+drain' if drain else ''}"
            result.setdefault(name, []).append(
                time_calls(lambda: model(*inputs), inputs, clear_kind=clear_kind, upload=upload, drain=drain)
            )
        with steady_state._sleep_before_clear():
            import triton.testing

            result["do_bench_sleep_clear"] = [
                triton.testing.do_bench(lambda: model(*inputs), warmup=100, rep=300, return_mode="median") for _ in range(2)
            ]
    return {name: statistics.median(values) for name, values in result.items()}


# The peers' load_inline builds, made all at once before anything is timed (`prebuild`).
EXTENSIONS = "/tmp/clear-kinds-extensions"


def peer(problem: Path, candidate: Path, command: str = "peer") -> dict:
    done = subprocess.run(
        [sys.executable, __file__, command, "--problem", str(problem), "--candidate", str(candidate)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(REPO), "TORCH_EXTENSIONS_DIR": EXTENSIONS},
        cwd=REPO,
    )
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": done.stderr[-800:]}


def command_load(candidate: Path) -> None:
    from evaluation.harness.sandboxed import loading

    loading.load_module(loading.CANDIDATE_MODULE, candidate.read_text(), str(candidate))
    print(json.dumps({"loaded": True}))


def prebuild(rows: dict, tasks: list[str], folder: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    sources = [cuda_l1.write_sources(folder, rows[key]) for key in tasks]
    with ThreadPoolExecutor(max_workers=12) as pool:
        list(pool.map(lambda pair: peer(*pair, command="load"), sources))


def command_run(tasks: list[str], out: Path) -> None:
    rows = {cuda_l1.key(r): r for r in cuda_l1.entries()}
    folder = Path(tempfile.mkdtemp(prefix="clear-kinds-"))
    prebuild(rows, tasks, folder)
    done = set(cuda_l1.load_results(out / "clear_kinds.jsonl"))
    for key in tasks:
        if key in done:
            continue
        problem, candidate = cuda_l1.write_sources(folder, rows[key])
        record = {"key": key, "peer": peer(problem, candidate), **steady_state.harness(problem, candidate, out)}
        cuda_l1.append(out / "clear_kinds.jsonl", record)
        report_row(record)


def report_row(record: dict) -> None:
    timed = record["peer"]
    if "error" in timed or "error" in (timed.get("candidate") or {}):
        print(record["key"], "peer failed:", (timed.get("error") or timed["candidate"]["error"])[-300:], flush=True)
        return
    reference, candidate = timed["reference"], timed["candidate"]
    cells = [
        f"{name} {reference[name] * 1e3:.1f}/{candidate[name] * 1e3:.1f}={reference[name] / candidate[name]:.3f}"
        for name in reference
    ]
    steady = record.get("steady")
    harness_ms = f"{(record.get('steady_eager_ms') or 0) * 1e3:.1f}/{(record.get('steady_candidate_ms') or 0) * 1e3:.1f}"
    print(record["key"], f"harness {harness_ms}={steady}", "; ".join(cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "peer", "load", "report"))
    parser.add_argument("--tasks", default="")
    parser.add_argument("--out", default="var/clear-kinds")
    parser.add_argument("--problem")
    parser.add_argument("--candidate")
    args = parser.parse_args()
    if args.command == "peer":
        steady_state.command_peer(Path(args.problem), Path(args.candidate), time_side=_time_side)
        return
    if args.command == "load":
        command_load(Path(args.candidate))
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.command == "run":
        command_run([t for t in args.tasks.split(",") if t], out)
    else:
        for record in cuda_l1.load_results(out / "clear_kinds.jsonl").values():
            report_row(record)


if __name__ == "__main__":
    main()
