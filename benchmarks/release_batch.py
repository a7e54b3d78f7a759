"""Measure a release: every candidate of a source through the harness CLI, then packed as one file
the platform imports (evaluation/harness/release.py; `manage.py import_release`).

Plain Python (no Django, no torch in this process). Each candidate goes through
`python -m evaluation.harness verify ... --json` in its own process, as harness_cuda_l1.py does.
Every GPU of the host (--gpus, default all that nvidia-smi lists) verifies at once: each has its
own device lock (STATE/device-<gpu>.lock) and --parallel verifications of its own, pinned to it with
CUDA_VISIBLE_DEVICES (only their sandboxes' start and torch's import overlap: one verification holds
a device at a time, harness 11). Meanwhile --build-cpus builds ahead (`harness build --ahead`: the
candidate's module in its sandbox with no GPU, TORCH_CUDA_ARCH_LIST from the GPUs' compute
capability) compile the load_inline candidates into the build cache their verification then
reads; a GPU takes a candidate with a build only once its build is done, and the others meanwhile.
Verdicts accumulate in --state as JSON lines, so a batch cut short resumes where it stopped (the
state is read first); a candidate whose CLI run gave no verdict is tried again on the next run.
STATE/builds.jsonl records each build ahead and STATE/runs.jsonl each verification's GPU and wall
time (`python -m evaluation.harness release report` reads both).

    # all CUDA-L1 H100 entries (the 17 whose code is the string "None" included), four baselines
    python benchmarks/release_batch.py run  --state var/release-h100 --arch h100 --budget-s 3000 --build-cpus 12
    python benchmarks/release_batch.py pack --state var/release-h100 --name h100-2026-11-26-cuda-l1 \\
        --out data/releases/h100-2026-11-26-cuda-l1.jsonl.gz
    # the builtin optimizer's candidates, written by benchmarks/builtin_optimizer_gpu.py --out DIR
    python benchmarks/release_batch.py run  --source builtin --candidates DIR --state var/release-h100-builtin --arch h100
    # on the CPU, a few entries (arch cpu; eager only unless --baselines says otherwise)
    python benchmarks/release_batch.py run  --device cpu --arch cpu --only L1T1,L1T2 --state var/release-cpu

`pack` is `python -m evaluation.harness release pack`; it refuses a batch with entries still to
measure unless --partial.
"""

import argparse
import concurrent.futures
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness_cuda_l1 import (
    ALL_BASELINES,
    BUILD_CACHE,
    RELEASE,
    append,
    entries,
    first_keys,
    key,
    load_results,
    run_cli,
    verify_args,
)
from evaluation.harness import baseline_cache, release
from evaluation.harness.verdict import BASELINES, HARNESS_VERSION

REPO = Path(__file__).resolve().parents[1]
FAILURES = "failures.jsonl"  # CLI runs that gave no verdict: tried again on the next run
BUILDS = "builds.jsonl"  # each build ahead: the candidate's key, whether it built, its wall time
RUNS = "runs.jsonl"  # each verification: the candidate's key, its GPU, its wall time, its wait for a build


def shown_path(path: Path) -> str:
    """A source file as the header names it: relative to the repository where it lies inside it."""
    path = path.resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name


def cuda_l1_candidates(path: Path) -> list[dict]:
    """Every published entry of a CUDA-L1 file, its scores kept as claims of the GPU the file is named for."""
    arch = path.name.split(".")[0]
    found = []
    for row in entries(path):
        found.append(
            {
                "key": f"cuda-l1:{key(row)}",
                "level": row["level_id"],
                "task": row["task_id"],
                "origin": "cuda-l1",
                "problem": row["ref_code"],
                "source": row["custom_code"],
                "claims": {"by": "cuda-l1", "arch": arch, "scores": {k: v for k, v in row.items() if k.startswith("score_")}},
            }
        )
    return found


def builtin_candidates(folder: Path) -> list[dict]:
    """The candidates benchmarks/builtin_optimizer_gpu.py wrote to `folder` (its manifest.json)."""
    found = []
    for problem in json.loads((folder / "manifest.json").read_text()):
        source = (folder / problem["folder"] / "problem.py").read_text()
        for candidate in problem["candidates"]:
            found.append(
                {
                    "key": f"builtin:L{problem['level']}T{problem['task']}:{candidate['file']}",
                    "level": problem["level"],
                    "task": problem["task"],
                    "origin": "builtin",
                    "problem": source,
                    "source": (folder / problem["folder"] / candidate["file"]).read_text(),
                    "claims": None,
                }
            )
    return found


# What a resumed batch must keep, as its refusal names each.
SETTINGS = {
    "arch": "--arch",
    "device": "--device",
    "baselines": "--baselines",
    "plan": "--plan",
    "limits": "--limits",
    "sources": "source file",
    "planned": "set of entries (--only, --source)",
}


def start(state: Path, settings: dict) -> None:
    """Write the batch's settings, or check that a resumed batch measures as it began."""
    path = state / release.STATE_BATCH
    if not path.exists():
        path.write_text(json.dumps(settings, indent=2) + "\n")
        return
    began = json.loads(path.read_text())
    differs = [label for name, label in SETTINGS.items() if began[name] != settings[name]]
    if began["harness"]["version"] != settings["harness"]["version"]:
        differs.append("harness version")
    elif began["harness"]["commit"] != settings["harness"]["commit"] and not harness_unchanged(began, settings):
        differs.append("the harness's code")
    if differs:
        raise SystemExit(
            f"{state} was started with another {', '.join(differs)}: resume it with the options it began with "
            f"({path}), or measure into a new --state."
        )


def harness_unchanged(began: dict, now: dict) -> bool:
    """Whether evaluation/harness is the same at both commits (a resumed batch may follow other commits)."""
    if began["harness"]["dirty"] or now["harness"]["dirty"]:
        return False
    done = subprocess.run(
        ["git", "diff", "--quiet", began["harness"]["commit"], now["harness"]["commit"], "--", "evaluation/harness"], cwd=REPO
    )
    return done.returncode == 0


def host_gpus() -> list[tuple[str, str]]:
    """(index, compute capability) of each GPU nvidia-smi lists; none where it lists none."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,compute_cap", "--format=csv,noheader"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    rows = [[part.strip() for part in line.split(",")] for line in done.stdout.splitlines() if "," in line]
    return [(index, capability) for index, capability in rows] if done.returncode == 0 else []


def arch_list(capabilities: list[str]) -> str:
    """TORCH_CUDA_ARCH_LIST as torch derives it from the visible GPUs when it is unset ("9.0+PTX" on
    an H100): a build ahead with no GPU then compiles exactly what the verification would."""
    found = sorted(set(capabilities), key=lambda c: tuple(int(part) for part in c.split(".")))
    return ";".join(found[:-1] + [found[-1] + "+PTX"]) if found else ""


def needs_build(candidate: dict) -> bool:
    """Whether loading the candidate compiles an extension (what a build ahead is for)."""
    return "load_inline" in candidate["source"] or "cpp_extension" in candidate["source"]


class WorkList:
    """The candidates still to verify, in order; a GPU takes the first whose build (if it has one)
    is done, and waits only when every candidate left is still building."""

    def __init__(self, todo: list[dict], building: set[str], *, deadline: float):
        self.pending = list(todo)
        self.building = set(building)
        self.deadline = deadline
        self.changed = threading.Condition()

    def built(self, key: str) -> None:
        with self.changed:
            self.building.discard(key)
            self.changed.notify_all()

    def take(self) -> tuple[dict | None, float]:
        """The next candidate ready to verify (None: nothing left, or the budget is spent) and how
        long this GPU waited for a build."""
        began = time.monotonic()
        with self.changed:
            while self.pending and time.monotonic() < self.deadline:
                for index, candidate in enumerate(self.pending):
                    if candidate["key"] not in self.building:
                        return self.pending.pop(index), time.monotonic() - began
                self.changed.wait(timeout=5)
            return None, time.monotonic() - began


def run_work(todo: list[dict], *, gpus: list[str], parallel: int, build_cpus: int, budget_s: float, verify, build) -> None:
    """`verify(candidate, gpu, waited_s)` for every candidate, `parallel` at a time on each GPU, while
    `build(candidate)` runs ahead for those that need one, `build_cpus` at a time, in the order the
    GPUs will want them. Nothing starts after `budget_s`."""
    deadline = time.monotonic() + budget_s
    to_build = [c for c in todo if needs_build(c)] if build_cpus > 0 else []
    work = WorkList(todo, {c["key"] for c in to_build}, deadline=deadline)
    builds = iter(to_build)
    taking = threading.Lock()

    def builder():
        while True:
            with taking:
                candidate = next(builds, None)
            if candidate is None:
                return
            try:
                if time.monotonic() < deadline:
                    build(candidate)
            finally:
                work.built(candidate["key"])  # built or not, the verification builds what is missing

    def verifier(gpu: str):
        while True:
            candidate, waited = work.take()
            if candidate is None:
                return
            try:
                verify(candidate, gpu, waited)
            except Exception as exc:  # noqa: BLE001  (one candidate's trouble must not take its GPU out of the batch)
                print(f"{candidate['key']:40s} not measured on {gpu}: {type(exc).__name__}: {exc}", flush=True)

    threads = [threading.Thread(target=builder) for _ in range(min(build_cpus, len(to_build)))]
    threads += [threading.Thread(target=verifier, args=(gpu,)) for gpu in gpus for _ in range(parallel)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def write_sources(candidate: dict, folder: Path) -> tuple[Path, Path]:
    name = candidate["key"].replace(":", "_").replace("/", "_")
    problem, source = folder / f"{name}_problem.py", folder / f"{name}_candidate.py"
    problem.write_text(candidate["problem"])
    source.write_text(candidate["source"])
    return problem, source


def build_ahead(candidate: dict, folder: Path, state: Path, *, device: str, limits, env: dict, timeout: float) -> dict:
    """One build ahead through the CLI (no GPU: `env` empties CUDA_VISIBLE_DEVICES), recorded in BUILDS."""
    problem, source = write_sources(candidate, folder)
    limits = {**(limits or {}), "build_cache_dir": BUILD_CACHE}
    args = ["build", "--ahead", "--problem", str(problem), "--candidate", str(source), "--device", device]
    reply, wall, log = run_cli([*args, "--limits", json.dumps(limits)], timeout, env=env)
    record = {"key": candidate["key"], "wall_s": round(wall, 1), **(reply or {"built": False, "reason": log[-400:]})}
    append(state / BUILDS, record)
    print(f"built    {candidate['key']:40s} {record['built']!s:5s} {wall:6.1f}s", flush=True)
    return record


def on_gpu(limits, state: Path, gpu: str) -> dict:
    """The limits of a CLI run on one GPU: that GPU's device lock, and the batch's build cache."""
    lock = str((state / f"device-{gpu}.lock").resolve())
    return {**(limits or {}), "build_cache_dir": BUILD_CACHE, "device_lock_path": lock}


def pinned(env: dict, gpu: str, device: str) -> dict:
    """`env` for a CLI run that sees only `gpu` (on cuda)."""
    return {**env, "CUDA_VISIBLE_DEVICES": gpu} if device == "cuda" else env


def measure(
    candidate: dict,
    folder: Path,
    state: Path,
    *,
    device: str,
    baselines: str,
    plan,
    limits,
    timeout: float,
    gpu: str = "0",
    env: dict | None = None,
) -> dict:
    """One candidate through the CLI on one GPU (its own device lock; `env` pins the process to it):
    its entry line (release.ENTRY_KEYS), or a failure without a verdict."""
    problem, source = write_sources(candidate, folder)
    limits = on_gpu(limits, state, gpu)
    args = verify_args(
        problem, source, device=device, baselines=baselines, plan=plan, limits=limits, baseline_cache=state / "baselines"
    )
    verdict, wall, log = run_cli(args, timeout, env=env)
    record = {
        "key": candidate["key"],
        "level": candidate["level"],
        "task": candidate["task"],
        "problem_sha256": release.sha256_text(candidate["problem"]),
        "origin": candidate["origin"],
        "source": candidate["source"],
        "source_sha256": release.sha256_text(candidate["source"]),
        "claims": candidate["claims"],
        "measured_at": release.now(),
        "verdict": verdict,
        "wall_s": round(wall, 1),
    }
    if verdict is None:
        record["log"] = log[-2000:]
    return record


def probe_devices(candidates: list[dict], state: Path, *, device: str, gpus: list[str], limits, env: dict, wanted: int) -> None:
    """A/A probes (`harness probe`: a problem's own Model as the candidate, no user code) before any
    candidate, one per GPU at a time, until the device keeps the controls its stated intervals need
    (`baseline_cache.probes_due`): of short calls (the harness's own SHORT_PROBES) and of longer ones
    (level-1 problems). Without them every verdict states its process's spread only."""
    cache = state / "baselines"
    level_1 = sorted({(f"L1T{c['task']}", c["problem"]) for c in candidates if c["level"] == 1 and c["problem"].strip()})
    short = [(path.stem, path.read_text()) for path in baseline_cache.SHORT_PROBES]
    problems = short + level_1[: 3 * wanted]
    passed = 0
    for first in range(0, len(problems), len(gpus)):
        if passed >= wanted and not baseline_cache.control_due(str(cache), device, HARNESS_VERSION):
            break
        batch = list(zip(gpus, problems[first : first + len(gpus)]))
        with tempfile.TemporaryDirectory() as scratch, concurrent.futures.ThreadPoolExecutor(len(batch)) as pool:

            def one(gpu_problem):
                gpu, (name, source) = gpu_problem
                path = Path(scratch) / f"probe_{name}.py"
                path.write_text(source)
                args = ["probe", "--problem", str(path), "--device", device, "--baseline-cache", str(cache)]
                args += ["--limits", json.dumps(on_gpu(limits, state, gpu))]
                reply, wall, log = run_cli(args, 900, env=pinned(env, gpu, device))
                status = (reply or {}).get("status")
                control = (reply or {}).get("control") or {}
                shown = f"probe {name} on gpu {gpu}: {status} ({wall:.0f} s), A/A {control.get('speedup')}"
                print(shown if reply else f"{shown}: {log[-300:]}", flush=True)
                return status == "verified"

            passed += sum(pool.map(one, batch))
    slots = cache / "controls-devices.json"
    print(f"{passed} probes verified; the devices' controls: {slots.read_text() if slots.exists() else 'none'}", flush=True)


def command_run(args, candidates: list[dict], sources: list[dict]) -> None:
    state = args.state
    state.mkdir(parents=True, exist_ok=True)
    baselines = args.baselines or (ALL_BASELINES if args.device == "cuda" else "eager")
    plan = json.loads(args.plan) if args.plan else None
    limits = json.loads(args.limits) if args.limits else None
    only = set(first_keys(args.only))
    chosen = [c for c in candidates if not only or c["key"].split(":", 1)[1].split(":")[0] in only or c["key"] in only]
    settings = release.batch_settings(
        arch=args.arch,
        device=args.device,
        baselines=baselines.split(","),
        plan=plan,
        limits=limits,
        sources=sources,
        planned=[c["key"] for c in chosen],
    )
    start(state, settings)
    done = load_results(state / release.STATE_RECORDS)
    # Levels interleaved (L1 T1, L2 T1, L3 T1, L1 T2 ...), so a batch cut short still covers each level.
    todo = sorted((c for c in chosen if c["key"] not in done), key=lambda c: (c["task"], c["level"], c["key"]))
    gpus, architectures = devices(args)
    print(f"{len(done)} measured, {len(todo)} to go on {args.device} ({', '.join(gpus)}) against {baselines}", flush=True)
    timeout = (release.public_limits(limits)["wall_time_s"]) + 300
    # The builds ahead and the verifications compile for the same architectures, so the build is reused.
    compiled_for = {"TORCH_CUDA_ARCH_LIST": architectures} if architectures else {}
    probes = args.probes if args.probes is not None else (6 if args.device == "cuda" else 0)
    if probes and todo:
        probe_devices(candidates, state, device=args.device, gpus=gpus, limits=limits, env=compiled_for, wanted=probes)

    def one(candidate, gpu, waited):
        env = pinned(compiled_for, gpu, args.device)
        record = measure(
            candidate,
            folder,
            state,
            device=args.device,
            baselines=baselines,
            plan=plan,
            limits=limits,
            timeout=timeout,
            gpu=gpu,
            env=env,
        )
        append(
            state / RUNS,
            {
                "key": candidate["key"],
                "gpu": gpu,
                "wall_s": record["wall_s"],
                "build_wait_s": round(waited, 1),
                "ended": round(time.time(), 1),
            },
        )
        verdict = record["verdict"]
        if verdict is None:
            append(state / FAILURES, record)
            print(f"{candidate['key']:40s} no verdict ({record['wall_s']} s): {record['log'][-300:]}", flush=True)
            return
        append(state / release.STATE_RECORDS, {key: record[key] for key in release.ENTRY_KEYS})
        speedup = (verdict.get("timing") or {}).get("speedups", {}).get("eager")
        print(f"{candidate['key']:40s} {verdict['status']:9s} {record['wall_s']:6.1f}s gpu {gpu} eager {speedup}", flush=True)

    def ahead(candidate):
        env = {**compiled_for, "CUDA_VISIBLE_DEVICES": ""}
        build_ahead(candidate, folder, state, device=args.device, limits=limits, env=env, timeout=timeout)

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        run_work(
            todo,
            gpus=gpus,
            parallel=args.parallel,
            build_cpus=args.build_cpus,
            budget_s=args.budget_s,
            verify=one,
            build=ahead,
        )
    left = len(chosen) - len(load_results(state / release.STATE_RECORDS))
    if left:
        print(f"{left} entries still to measure: run the same command again.", flush=True)
    else:
        print(f"All {len(chosen)} measured: pack them with `python {Path(__file__).name} pack --state {state} ...`.", flush=True)


def devices(args) -> tuple[list[str], str]:
    """The GPUs to verify on (["cpu"] on the CPU) and TORCH_CUDA_ARCH_LIST for their builds."""
    if args.device == "cpu":
        return ["cpu"], ""
    found = host_gpus()
    chosen = [gpu.strip() for gpu in args.gpus.split(",") if gpu.strip()] if args.gpus != "all" else [i for i, _ in found]
    if not chosen:
        raise SystemExit("no GPU found (nvidia-smi lists none): name them with --gpus 0,1,... or measure with --device cpu")
    capability = dict(found)
    return chosen, arch_list([capability[gpu] for gpu in chosen if gpu in capability])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "pack"))
    parser.add_argument("--state", type=Path, required=True, help="the batch's folder: its settings and verdicts")
    parser.add_argument("--source", choices=("cuda-l1", "builtin"), default="cuda-l1")
    parser.add_argument("--release", type=Path, default=RELEASE, help="cuda-l1: the published file (default: H100's)")
    parser.add_argument("--candidates", type=Path, help="builtin: the folder builtin_optimizer_gpu.py wrote")
    parser.add_argument("--arch", help="the architecture measured on, e.g. h100 (cpu with --device cpu)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument(
        "--baselines", help=f"comma-separated, from {','.join(BASELINES)} (default: all four on cuda, eager on cpu)"
    )
    parser.add_argument("--plan", help="JSON object of Plan fields to change (default: the platform's)")
    parser.add_argument("--limits", help="JSON object of Limits fields to change")
    parser.add_argument("--only", default="", help="only these entries: L1T1,L2T3 or @FILE (one per line)")
    parser.add_argument("--gpus", default="all", help="cuda: the GPUs to verify on, e.g. 0,1,2,3 (default: every GPU)")
    parser.add_argument(
        "--probes",
        type=int,
        help=(
            "A/A probes of the device first: at least this many, and until it keeps the controls of short and long "
            "calls it needs (default: 6 on cuda; a CPU verdict runs its own)"
        ),
    )
    parser.add_argument("--parallel", type=int, default=2, help="verifications at a time on each GPU")
    parser.add_argument(
        "--build-cpus", type=int, default=0, help="builds ahead at a time on the CPU cores (0: each verification builds)"
    )
    parser.add_argument("--budget-s", type=float, default=3000, help="start no verification after this long")
    parser.add_argument("--name", help="pack: the release's name")
    parser.add_argument("--out", type=Path, help="pack: the file to write")
    parser.add_argument("--partial", action="store_true", help="pack: what is measured, the rest listed as missing")
    args = parser.parse_args(argv)
    if args.command == "pack":
        if not (args.name and args.out):
            parser.error("pack needs --name and --out")
        try:
            print(release.describe(release.pack(args.state, name=args.name, out=args.out, partial=args.partial)))
        except release.ReleaseError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    if not args.arch:
        parser.error("run needs --arch (h100, h200, ... or cpu)")
    if args.source == "builtin":
        if not args.candidates:
            parser.error("--source builtin needs --candidates DIR")
        manifest = args.candidates / "manifest.json"
        candidates = builtin_candidates(args.candidates)
        sources = [{"origin": "builtin", "path": shown_path(manifest), "sha256": release.sha256_file(manifest)}]
    else:
        candidates = cuda_l1_candidates(args.release)
        sources = [{"origin": "cuda-l1", "path": shown_path(args.release), "sha256": release.sha256_file(args.release)}]
    command_run(args, candidates, sources)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
