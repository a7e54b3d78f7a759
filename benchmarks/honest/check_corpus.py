"""A quick self-check of the honest corpus, outside the harness (which remains the judge).

For each pair in corpus.json, in a process of its own (as the harness runs each candidate): both
models built after the same seed, fresh seeded inputs per call, the candidate's output compared
with the problem's reference run in float64 by the harness's own measure (comparison.py:
|c - r| / (|r| + scale)), and the rules an honest candidate keeps checked directly: a plain
float32 tensor of the reference's shape, one address per element, no memory shared with the
inputs, the model's tensors or an earlier output still held, inputs unmodified. Then one call
at the harness's other sizes (problem_shapes.variants, the first the reference accepts).

    python benchmarks/honest/check_corpus.py --device cpu          # small sizes; CUDA-only kinds skipped
    python benchmarks/honest/check_corpus.py --device cuda --jobs 3 [--build] [--replay] [--time]

--device cpu scales every size constant down (odd sizes, as the harness's variants are) and runs
Triton through its interpreter (TRITON_INTERPRET=1). --build first imports every load_inline
candidate in parallel processes, filling the extension cache. --replay also tries the harness's
own capture of the candidate's call in a CUDA graph (baselines.try_replay) and reports whether it
captured (the harness treats a failed capture as no device time, not a fault). --time reports the
eager reference's and the candidate's median time per call (CUDA events, not the harness's method).
Prints one line per pair and a JSON summary; exits 1 if any pair fails.
"""

import argparse
import concurrent.futures
import copy
import importlib.util
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CUDA_ONLY = {"cuda_legacy", "cuda_current_stream", "cuda_graph", "streams_joined"}
TOLERANCE = 1e-2
CPU_TOLERANCE = 1e-4


def corpus() -> list[dict]:
    return json.loads((HERE / "corpus.json").read_text())


# -- one pair, in its own process ------------------------------------------------------------------


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _set_constants(module, values: dict) -> None:
    for name, value in values.items():
        setattr(module, name, value)


def _small_sizes(constants) -> dict:
    """CPU: every size of 16 or more scaled down to an odd size near an eighth of it."""
    return {c.name: max(c.value // 8, 8) + 1 for c in constants if c.value >= 16}


def check_one(entry: dict, device: str, replay: bool, timed: bool) -> dict:
    import torch

    sys.path.insert(0, str(REPO))
    from evaluation.harness import problem_shapes
    from evaluation.harness.sandboxed import comparison, output_facts

    problem_path, candidate_path = HERE / entry["problem"], HERE / entry["candidate"]
    problem = _load(problem_path, "honest_problem")
    started = time.monotonic()
    candidate = _load(candidate_path, "honest_candidate")
    result = {"name": entry["name"], "kind": entry["kind"], "load_s": round(time.monotonic() - started, 1)}
    constants = problem_shapes.size_constants(problem_path.read_text())
    original = {c.name: c.value for c in constants}
    tolerance = CPU_TOLERANCE if device == "cpu" else TOLERANCE
    problems = []

    def seed(s):
        torch.manual_seed(s)
        if device == "cuda":
            torch.cuda.manual_seed_all(s)

    def inputs_for(s):
        seed(s)
        with torch.device(device):
            return [x.to(device) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]

    def reference64(model, args):
        model64 = copy.deepcopy(model).double()
        args64 = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
        previous = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            with torch.no_grad():
                return model64(*args64)
        finally:
            torch.set_default_dtype(previous)

    def build(sizes: dict, s: int):
        _set_constants(problem, sizes)
        init = list(problem.get_init_inputs())
        seed(s)
        model = problem.Model(*init).to(device)
        seed(s)
        new = candidate.ModelNew(*init).to(device)
        return model, new

    def run_calls(sizes: dict, calls: int, label: str) -> dict:
        model, new = build(sizes, 1234 + calls)
        held, worst, fp32_worst = [], 0.0, 0.0
        for call in range(calls):
            args = inputs_for(100 + call)
            before = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
            with torch.no_grad():
                out = new(*args)
            if device == "cuda":
                torch.cuda.synchronize()
            if type(out) is not torch.Tensor:
                problems.append(f"{label}: returned {type(out).__name__}, not a plain torch.Tensor")
                return {}
            facts = output_facts.output_facts(out, inputs=args, earlier_outputs=held, model=new, held_spans=[])["leaves"][0]
            if out.dtype != torch.float32:
                problems.append(f"{label}: dtype {out.dtype}")
            if not facts["distinct_elements"]:
                problems.append(f"{label}: output elements share memory")
            for key in ("aliases_input", "aliases_earlier_output", "aliases_model_state"):
                if facts[key]:
                    problems.append(f"{label}: output {key}")
            if any(isinstance(a, torch.Tensor) and not torch.equal(a, b) for a, b in zip(args, before)):
                problems.append(f"{label}: an input was modified")
            ref = reference64(model, args)
            if list(out.shape) != list(ref.shape):
                problems.append(f"{label}: shape {list(out.shape)}, reference {list(ref.shape)}")
                return {}
            compared = comparison.compare_leaf(out, ref)
            if compared.get("nonfinite"):
                problems.append(f"{label}: {compared['nonfinite']} non-finite elements")
            with torch.no_grad():
                fp32 = model(*args)
            fp32_error = comparison.compare_leaf(fp32, ref)["max_rel_error"]
            fp32_worst = max(fp32_worst, fp32_error)
            error, allowed = compared["max_rel_error"], tolerance
            if device == "cuda":
                # The harness's rule (reference_process.compare, tolerance.py): 4x the problem's own
                # float32 error, capped at 0.1; beyond 0.1, held to the float32 output at 1e-2.
                if fp32_error > 0.1:
                    error = comparison.compare_leaf(out, fp32.double())["max_rel_error"]
                else:
                    allowed = max(tolerance, min(4 * fp32_error, 0.1))
            if error > allowed or math.isnan(error):
                problems.append(
                    f"{label}: call {call}: relative error {error:.3g} > {allowed:.3g} (float32 reference's own {fp32_error:.3g})"
                )
            worst = max(worst, compared["max_rel_error"])
            held.append(out)
        return {"max_rel_error": worst, "reference_fp32_error": fp32_worst, "model": new, "reference": model}

    sizes = _small_sizes(constants) if device == "cpu" else dict(original)
    first = run_calls(sizes, 3, "published sizes" if device == "cuda" else f"sizes {sizes}")
    result["sizes"] = sizes
    result["max_rel_error"] = first.get("max_rel_error")
    result["reference_fp32_error"] = first.get("reference_fp32_error")

    if device == "cuda" and first and timed:
        result.update(_times(torch, first["reference"], first["model"], inputs_for(7)))
    if device == "cuda" and first and replay:
        sys.path.insert(0, str(REPO))
        from evaluation.harness.sandboxed import baselines

        # As the harness measures device time: the call captured on its input tensors, then each
        # replay after fresh inputs are written into those same tensors.
        args = inputs_for(8)
        with torch.no_grad():
            replayed, status = baselines.try_replay(first["model"], args)
            result["graph_capture"] = status
            if replayed is not None:
                errors = []
                for replay in range(2):
                    for slot, fresh in zip(args, inputs_for(20 + replay)):
                        if isinstance(slot, torch.Tensor):
                            slot.copy_(fresh)
                    out = replayed()
                    torch.cuda.synchronize()
                    errors.append(comparison.compare_leaf(out, reference64(first["reference"], args))["max_rel_error"])
                result["graph_replay_error"] = max(errors)
        # After a capture, captured or not, the candidate must still run and be right.
        after = run_calls(sizes, 1, "after the capture attempt")
        result["after_capture_error"] = after.get("max_rel_error")

    # The harness's other sizes: the first variant the reference accepts.
    for variant in problem_shapes.variants(constants):
        trial = (
            {**sizes, **variant}
            if device == "cuda"
            else {**sizes, **{k: _small_sizes(constants)[k] // 2 + 1 for k in variant if k in sizes}}
        )
        try:
            _set_constants(problem, trial)
            model, _ = build(trial, 5)
            with torch.no_grad():
                model(*inputs_for(6))
        except Exception:  # noqa: BLE001  (the reference refuses this variant: the harness tries the next)
            continue
        checked = run_calls(trial, 1, f"variant {variant}")
        result["variant"] = {"sizes": trial, "max_rel_error": checked.get("max_rel_error")}
        break
    _set_constants(problem, original)
    if device == "cuda":
        torch.cuda.synchronize()
    result["problems"] = problems
    result["ok"] = not problems
    return result


def _times(torch, reference, candidate, args) -> dict:
    def median_ms(fn):
        with torch.no_grad():
            for _ in range(3):
                fn(*args)
            torch.cuda.synchronize()
            samples = []
            for _ in range(15):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn(*args)
                end.record()
                torch.cuda.synchronize()
                samples.append(start.elapsed_time(end))
        samples.sort()
        return round(samples[len(samples) // 2], 4)

    return {"reference_ms": median_ms(reference), "candidate_ms": median_ms(candidate)}


# -- the driver --------------------------------------------------------------------------------------


def _child(entry: dict, args) -> dict:
    env = dict(os.environ)
    if args.device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    command = [sys.executable, str(Path(__file__).resolve()), "--one", entry["name"], "--device", args.device]
    command += ["--replay"] if args.replay else []
    command += ["--time"] if args.time else []
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=args.timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-6:]
        return {
            "name": entry["name"],
            "kind": entry["kind"],
            "ok": False,
            "problems": [f"exit {done.returncode}: " + " | ".join(tail)],
        }
    return json.loads(lines[-1])


def _build(entries: list[dict], jobs: int) -> None:
    """Import every load_inline candidate at once, each in its own process, to fill the build cache."""
    cuda = [e for e in entries if e["kind"].startswith("cuda_legacy") or e["kind"].startswith("cuda_current")]
    code = (
        "import importlib.util,sys;s=importlib.util.spec_from_file_location('c',sys.argv[1]);"
        "m=importlib.util.module_from_spec(s);s.loader.exec_module(m)"
    )
    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max(jobs, 1)) as pool:
        runs = {
            e["name"]: pool.submit(
                subprocess.run, [sys.executable, "-c", code, str(HERE / e["candidate"])], capture_output=True, text=True
            )
            for e in cuda
        }
    for name, run in runs.items():
        done = run.result()
        status = "built" if done.returncode == 0 else "FAILED: " + " | ".join(done.stderr.strip().splitlines()[-8:])
        print(f"build {name}: {status}", flush=True)
    print(f"build: {len(cuda)} extensions in {time.monotonic() - began:.0f} s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--only", help="comma-separated names")
    parser.add_argument("--jobs", type=int, default=1, help="pairs checked at once (each in its own process)")
    parser.add_argument("--build", action="store_true", help="build every load_inline extension first, in parallel")
    parser.add_argument("--replay", action="store_true", help="also try the harness's CUDA-graph capture")
    parser.add_argument("--time", action="store_true", help="also time reference and candidate (CUDA)")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    entries = corpus()
    if args.one:
        entry = next(e for e in entries if e["name"] == args.one)
        print(json.dumps(check_one(entry, args.device, args.replay, args.time), default=str), flush=True)
        return 0
    if args.only:
        wanted = set(args.only.split(","))
        entries = [e for e in entries if e["name"] in wanted]
    skipped = [e["name"] for e in entries if args.device == "cpu" and e["kind"] in CUDA_ONLY]
    entries = [e for e in entries if e["name"] not in skipped]
    if args.build and args.device == "cuda":
        _build(entries, args.jobs * 2)
    results = []
    with concurrent.futures.ThreadPoolExecutor(max(args.jobs, 1)) as pool:
        for result in pool.map(lambda e: _child(e, args), entries):
            results.append(result)
            extra = {
                k: result[k]
                for k in ("reference_ms", "candidate_ms", "graph_capture", "graph_replay_error", "variant")
                if k in result
            }
            error, own = result.get("max_rel_error"), result.get("reference_fp32_error")
            print(
                f"{'ok  ' if result['ok'] else 'FAIL'} {result['name']:40s} err={error if error is None else f'{error:.2e}'} "
                f"fp32_err={own if own is None else f'{own:.2e}'} "
                f"{json.dumps(extra, default=str)} {'; '.join(result.get('problems', []))}",
                flush=True,
            )
    summary = {
        "device": args.device,
        "checked": len(results),
        "failed": [r["name"] for r in results if not r["ok"]],
        "skipped_cuda_only": skipped,
    }
    print(json.dumps(summary))
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
