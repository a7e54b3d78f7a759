"""How late does the host wake after a device-wide synchronize, and does the context's scheduling mode
decide it? (issue 15, no_hidden_work's drain gaps)

no_hidden_work compares, per burst call, the gap from the call's end to the device drained with the
same gap after a short write of the harness's own (the floor). On an H100 that difference moved by
5 us between processes for the same honest call. This probe times the same two gaps in plain torch,
in several processes, with the primary context's scheduling flag left to CUDA (auto) or set to spin,
yield or blocking sync before torch creates the context:

    python benchmarks/wake_probe.py sweep --processes 5        # JSON lines, then a summary per mode
Plain Python (no Django).
"""

import argparse
import ctypes
import json
import statistics
import subprocess
import sys

MODES = {"auto": 0x00, "spin": 0x01, "yield": 0x02, "blocking": 0x04}


def set_schedule(mode: str) -> None:
    cuda = ctypes.CDLL("libcuda.so.1")
    assert cuda.cuInit(0) == 0
    device = ctypes.c_int()
    assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
    assert cuda.cuDevicePrimaryCtxSetFlags(device, MODES[mode]) == 0


def probe(mode: str, calls: int) -> dict:
    set_schedule(mode)
    import torch

    upload = torch.empty(16 << 20, dtype=torch.uint8).pin_memory()
    target = torch.empty_like(upload, device="cuda")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    work = torch.randn(2000, 2000, device="cuda")
    events = [[torch.cuda.Event(enable_timing=True) for _ in range(4)] for _ in range(calls)]
    for _ in range(20):
        torch.nn.functional.gelu(work, approximate="tanh")
    torch.cuda.synchronize()
    for end, settled, floor_end, floor_settled in events:
        target.copy_(upload, non_blocking=True)  # the burst's upload of a call's inputs
        flush.fill_(1)
        torch.nn.functional.gelu(work, approximate="tanh")  # one 15 us kernel, as L1 T88's candidate
        end.record()
        torch.cuda.synchronize()
        settled.record()
        flush[: 32 << 20].fill_(2)  # the floor: a short write of the harness's own
        floor_end.record()
        torch.cuda.synchronize()
        floor_settled.record()
    torch.cuda.synchronize()
    gaps = [e[0].elapsed_time(e[1]) * 1e3 for e in events]
    floors = [e[2].elapsed_time(e[3]) * 1e3 for e in events]
    return {
        "mode": mode,
        "gap_us": round(statistics.median(gaps), 2),
        "floor_us": round(statistics.median(floors), 2),
        "excess_us": round(statistics.median(g - f for g, f in zip(gaps, floors)), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["process", "sweep"])
    parser.add_argument("--mode", default="auto", choices=list(MODES))
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    if args.command == "process":
        print(json.dumps(probe(args.mode, args.calls)), flush=True)
        return
    results: dict = {mode: [] for mode in MODES}
    for _ in range(args.processes):
        for mode in MODES:
            done = subprocess.run(
                [sys.executable, __file__, "process", "--mode", mode, "--calls", str(args.calls)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            line = (done.stdout.strip().splitlines() or [""])[-1]
            if line.startswith("{"):
                record = json.loads(line)
                results[mode].append(record)
                print(line, flush=True)
            else:
                print(json.dumps({"mode": mode, "error": done.stderr[-400:]}), flush=True)
    for mode, records in results.items():
        if records:
            excess = [r["excess_us"] for r in records]
            print(
                f"{mode}: excess over the floor {min(excess):.2f}-{max(excess):.2f} us across {len(excess)} processes; "
                f"gaps {[r['gap_us'] for r in records]}, floors {[r['floor_us'] for r in records]}",
                flush=True,
            )


if __name__ == "__main__":
    main()
