"""Where one verification's time goes, call by call, and how noisy each way of timing a call is.

Plain Python (no Django). The candidate process's and the reference process's request handlers run
here in one process, unsandboxed, on one CUDA-L1 entry (or a test problem), so the cost of every
step of a timed call and of a checked one is measured directly:

    python benchmarks/harness_overhead.py --task L1T1 --device cuda --out var/overhead.json

It reports, per side: the whole `call` request, its parts (fresh inputs, fingerprints, poison,
the timed call, output facts, integrity facts), the comparison of a checked call (float64
reference, dump, compare), and, for the timed call alone, three clocks over the same samples:
the harness's (end event after a device-wide synchronize), an end event on the calling stream
recorded right after the call returns (blind to work left on other streams), and the host's wall
time of the launch. Their medians and spreads say how much of a sample is the host's wake-up
after the synchronize rather than the call.
"""

import argparse
import cProfile
import gzip
import io
import json
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from evaluation.harness import inputs, integrity, loading, output_facts  # noqa: E402
from evaluation.harness.candidate_process import CandidateProcess  # noqa: E402
from evaluation.harness.pipeline import DeviceLock  # noqa: E402
from evaluation.harness.reference_process import ReferenceProcess  # noqa: E402

RELEASE = REPO / "data" / "cuda-l1" / "h100.jsonl.gz"


def sources(task: str, folder: Path) -> tuple[Path, Path]:
    if task.startswith("test:"):
        problem, candidate = task.removeprefix("test:").split("/")
        tests = REPO / "tests" / "harness"
        return tests / "problems" / f"{problem}.py", tests / "candidates" / f"{candidate}.py"
    with gzip.open(RELEASE, "rt") as handle:
        row = next(r for r in map(json.loads, handle) if f"L{r['level_id']}T{r['task_id']}" == task)
    problem, candidate = folder / "problem.py", folder / "candidate.py"
    problem.write_text(row["ref_code"])
    candidate.write_text(row["custom_code"])
    return problem, candidate


def spread(values: list[float]) -> dict:
    ordered = sorted(values)
    q = statistics.quantiles(ordered, n=4) if len(ordered) > 1 else [ordered[0]] * 3
    return {"median": round(q[1], 5), "iqr": round(q[2] - q[0], 5), "min": round(ordered[0], 5),
            "iqr_fraction": round((q[2] - q[0]) / q[1], 4) if q[1] else None, "n": len(ordered)}


def timed(parts: dict, name: str, fn, *args):
    began = time.perf_counter()
    result = fn(*args)
    parts.setdefault(name, []).append((time.perf_counter() - began) * 1e3)
    return result


def call_parts(cp: CandidateProcess, who: str, seed: int, parts: dict, device: str) -> None:
    """The steps of CandidateProcess.call, each on the clock (synchronized, so GPU work is counted where it is issued)."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    candidate = who == "candidate"
    timed(parts, "state_apply", cp.original_state.apply)
    args = timed(parts, "inputs", lambda: (inputs.generate(cp.problem, seed, device, None), sync())[0])
    before = timed(parts, "fingerprints", inputs.fingerprints, args)
    timed(parts, "poison", lambda: (output_facts.poison(cp.spec, device), sync()))
    model = cp.candidate_model if candidate else cp.reference_model
    fn = model if candidate else cp.baseline_calls[who]
    with torch.no_grad():
        result, *_ = timed(parts, "timed_call", cp.timer.time, fn, args)
    timed(parts, "integrity_facts", cp.after_candidate if candidate else cp.after_baseline)
    timed(parts, "output_facts", lambda: output_facts.output_facts(result, inputs=args, earlier_outputs=[], model=model))
    timed(parts, "fingerprints_after", inputs.fingerprints, args)
    assert before is not None


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


# What happens between two samples: nothing (a tight loop), the host asleep or spinning for as
# long as the harness's bookkeeping of a call takes, or asleep and then the GPU kept busy for a
# moment right before the sample. Which of these widens the spread says where the noise comes from.
BETWEEN = {
    "tight": lambda: None,
    "sleep_5ms": lambda: time.sleep(0.005),
    "spin_5ms": lambda: _spin(0.005),
    "sleep_5ms_gpu_busy_200us": lambda: (time.sleep(0.005), torch.cuda._sleep(200_000)),
}
# The same as sleep_5ms, but the GPU is kept busy for this long after the synchronize and before the
# start event (a lead): the host's launch of the call is then hidden unless it takes longer. Says
# how much of a sample is the host's launch latency after a pause. Not the harness's method: work a
# candidate starts on another stream could run during the lead, outside the interval.
LEADS_US = {"sleep_5ms_lead_100us": 100, "sleep_5ms_lead_300us": 300}


def cycles_per_us() -> float:
    """The GPU's clock as torch.cuda._sleep counts it, from one timed sleep."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)  # warm
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    end.synchronize()
    return 10_000_000 / (start.elapsed_time(end) * 1e3)


def clocks(cp: CandidateProcess, who: str, args_for, device: str, samples: int, between, lead_cycles: int = 0) -> dict:
    """The same calls measured three ways at once, with `between()` before each."""
    if device != "cuda":
        return {}
    state = cp.candidate_state if who == "candidate" else cp.original_state
    fn = cp.candidate_model if who == "candidate" else cp.baseline_calls[who]
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, dtype=torch.int32, device="cuda")
    device_end, stream_end, host = [], [], []
    for i in range(samples + 5):
        args = args_for(i)
        state.apply()
        between()
        flush.zero_()
        start, after_call, after_sync = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        torch.cuda.synchronize()
        if lead_cycles:
            torch.cuda._sleep(lead_cycles)
        start.record()
        began = time.perf_counter()
        with torch.no_grad():
            fn(*args)
        launched = time.perf_counter()
        after_call.record()
        torch.cuda.synchronize()
        after_sync.record()
        after_sync.synchronize()
        cp.original_state.apply()
        if i >= 5:
            device_end.append(start.elapsed_time(after_sync))
            stream_end.append(start.elapsed_time(after_call))
            host.append((launched - began) * 1e3)
    return {"device_sync_end": spread(device_end), "stream_end": spread(stream_end), "host_launch": spread(host),
            "gap_sync_minus_stream": spread([d - s for d, s in zip(device_end, stream_end)])}


def call_costs(cp: CandidateProcess, rp: ReferenceProcess, seed, folder: Path, device: str, calls: int) -> dict:
    """What each step of a timed call, a checked call and the integrity facts costs, and a profile."""
    report: dict = {}
    for who in ("candidate", "eager"):
        for _ in range(5):
            cp.call({"who": who, "seed": next(seed)})
        began = time.perf_counter()
        for _ in range(calls):
            cp.call({"who": who, "seed": next(seed)})
        report[f"{who}_call_request_ms"] = round((time.perf_counter() - began) * 1e3 / calls, 3)
        parts: dict = {}
        for _ in range(calls):
            call_parts(cp, who, next(seed), parts, device)
        report[f"{who}_parts_ms"] = {name: spread(values)["median"] for name, values in parts.items()}

    compare: dict = {}
    for _ in range(10):
        s = next(seed)
        cp.call({"who": "candidate", "seed": s})
        timed(compare, "reference", rp.reference, {"seed": s})
        files = timed(compare, "dump", cp.dump, {"path_prefix": str(folder / f"dump{s}")})["files"]
        result = timed(compare, "compare", rp.compare, {"seed": s, "files": files})
        assert result["ok"]
    report["compare_ms"] = {name: spread(values)["median"] for name, values in compare.items()}

    facts: dict = {}
    for _ in range(calls):
        timed(facts, "state_capture", integrity.GlobalState.capture)
        timed(facts, "state_apply", cp.original_state.apply)
        timed(facts, "busy_threads", integrity.busy_threads, cp.harness_threads)
        timed(facts, "snapshot_changed", cp.snapshot.changed)
        timed(facts, "child_pids", integrity.child_pids)
        timed(facts, "seed_everything", loading.seed_everything, 5)
    report["facts_ms"] = {name: spread(values)["median"] for name, values in facts.items()}

    profile = cProfile.Profile()
    profile.enable()
    for _ in range(20):
        cp.call({"who": "candidate", "seed": next(seed)})
        cp.call({"who": "eager", "seed": next(seed)})
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(30)
    report["profile_top"] = text.getvalue().splitlines()[:60]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="L1T1", help="a CUDA-L1 key (L1T1) or test:PROBLEM/CANDIDATE")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device-lock", type=Path, help="a batch's device lock, taken exclusive for the clock comparison")
    parser.add_argument("--candidate", type=Path, help="this candidate file instead of the task's")
    parser.add_argument("--clocks-only", action="store_true", help="only the clock comparison (one process of a repeat)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    problem_path, candidate_path = sources(args.task, folder)
    candidate_path = args.candidate or candidate_path
    device = args.device

    cp = CandidateProcess(None)
    cp.describe({"device": device})
    cp.prepare({"problem_path": str(problem_path), "setup_seed": 11, "baselines": ["eager"], "flush_bytes": None,
                "gpu_memory_fraction": 0.5, "prime_compiler": True})
    loaded = cp.load({"candidate_path": str(candidate_path)})
    assert loaded["ok"], loaded
    cp.instantiate({"seed": 12})
    rp = ReferenceProcess()
    rp.prepare({"device": device, "problem_path": str(problem_path)})
    rp.instantiate({"seed": 12})

    report = {"task": args.task, "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
              "torch": torch.__version__, "snapshot_items": len(cp.snapshot)}
    seed = iter(range(1000, 10**6))
    if args.clocks_only:
        for who in ("candidate", "eager"):  # warm both sides before the clocks, nothing else measured
            for _ in range(10):
                cp.call({"who": who, "seed": next(seed)})
    else:
        report.update(call_costs(cp, rp, seed, folder, device, args.calls))
    report["threads"] = len(integrity.thread_ids())

    def args_for(i):
        return inputs.generate(cp.problem, 50_000 + i, device, None)

    # Under the batch's device lock, held exclusive, where other verifications share the GPU.
    with DeviceLock(str(args.device_lock) if args.device_lock else None) as lock, lock.exclusive():
        report["clocks"] = {name: {who: clocks(cp, who, args_for, device, 200, between) for who in ("candidate", "eager")}
                            for name, between in BETWEEN.items()}
        if device == "cuda":
            report["sleep_cycles_per_us"] = rate = cycles_per_us()
            report["clocks"].update({
                name: {who: clocks(cp, who, args_for, device, 200, BETWEEN["sleep_5ms"], round(lead_us * rate))
                       for who in ("candidate", "eager")}
                for name, lead_us in LEADS_US.items()})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k not in ("profile_top", "clocks")}, indent=1))
    for name, sides in report["clocks"].items():
        for who, figures in sides.items():
            if figures:
                print(f"{name:26s} {who:9s} " + "  ".join(f"{k} {v['median']:.4f} iqr {v['iqr_fraction']:.3f}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
