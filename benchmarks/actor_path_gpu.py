"""CUDA-L1 candidates through the platform's own job path on a GPU host, beside the harness CLI.

One command, on a GPU box with the repository and its requirements (no Redis, no PostgreSQL):

    python benchmarks/actor_path_gpu.py run --state var/harness-h100 [--keys L1T9,L2T23,...]
    python benchmarks/actor_path_gpu.py compare --state var/harness-h100

`run` starts embedded mode exactly as the web process does (SQLite, the in-process Dramatiq broker,
the evaluation worker registered as this machine's GPU), imports the chosen CUDA-L1 entries with
`import_candidate` (whose save fans the jobs out to the live architecture), waits for every
Evaluation, and writes one line per candidate to actor.jsonl. The worker verifies with the same
plan, limits and device lock as benchmarks/harness_cuda_l1.py (COURT_HARNESS_PLAN/LIMITS), so the
two paths can run at once on one GPU and `compare` sets each actor verdict beside the CLI's.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

from harness_cuda_l1 import BATCH_LIMITS, BATCH_PLAN, BUILD_CACHE, RELEASE, failed_check, load_results

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# Statuses the earlier CLI batches saw among these: verified, rejected (lazy tensor, reused output
# storage), incorrect, custom code that never ran, a beyond-speed-of-light claim, a tiny output.
DEFAULT_KEYS = ("L1T9", "L1T12", "L1T13", "L2T23", "L2T83", "L3T8", "L2T11", "L2T6", "L3T1", "L3T4", "L1T3", "L1T1")


def configure(state: Path) -> None:
    """Embedded mode, with the batch's plan and the shared device lock, before Django loads."""
    for name in ("REDIS_URL", "DATABASE_URL", "COURT_MODE"):
        os.environ.pop(name, None)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        COURT_VAR_DIR=str(state / "actor-var"),
        COURT_BASELINES_GPU="eager",
        COURT_BASELINE_CACHE_DIR=str(state / "baselines"),
        COURT_HARNESS_PLAN=json.dumps(BATCH_PLAN),
        COURT_HARNESS_LIMITS=json.dumps(
            {**BATCH_LIMITS, "build_cache_dir": BUILD_CACHE, "device_lock_path": str(state / "gpu.lock")}
        ),
    )


def command_run(state: Path, keys: list[str], timeout_s: float) -> None:
    configure(state)
    import django

    django.setup()
    from django.core.management import call_command

    from config.embedded import start_embedded_worker, stop_embedded_worker
    from court.models import Evaluation
    from court.published_kernels import read_release
    from court.services import import_candidate, import_kernelbench_problem

    call_command("migrate", verbosity=0)
    start_embedded_worker()  # registers this GPU first, so the candidates' saves fan out to it
    entries = {f"L{e.level}T{e.task}": e for e in read_release(RELEASE)}
    candidates = {}
    began = time.monotonic()
    for name in keys:
        entry = entries[name]
        problem, _ = import_kernelbench_problem(level=entry.level, task=entry.task, source=entry.ref_code)
        candidate, _ = import_candidate(
            problem=problem, code=entry.custom_code, origin_label="cuda-l1", arch="h100", claims=entry.claims
        )
        candidates[name] = candidate
    print(f"imported {len(candidates)} candidates; waiting for their evaluations", flush=True)
    results = state / "actor.jsonl"
    reported = set()
    while len(reported) < len(candidates) and time.monotonic() - began < timeout_s:
        for name, candidate in candidates.items():
            evaluations = list(Evaluation.objects.filter(candidate=candidate))
            if name in reported or not evaluations or any(e.is_pending for e in evaluations):
                continue
            reported.add(name)
            evaluation = evaluations[0]
            verdict = evaluation.verdict or {}
            record = {
                "key": name,
                "arch": evaluation.arch,
                "evaluations": len(evaluations),
                "attempts": evaluation.attempts,
                "status": evaluation.status,
                "reason": (evaluation.reason or verdict.get("reason", ""))[:400],
                "failed_check": failed_check(verdict),
                "speedups": (verdict.get("timing") or {}).get("speedups"),
                "harness_s": evaluation.harness_seconds,
                "flags": verdict.get("flags", []),
                "worker": evaluation.worker,
            }
            with results.open("a") as handle:
                handle.write(json.dumps(record) + "\n")
            print(f"actor {name:6s} {record['status']:9s} {record['failed_check'] or ''} {record['speedups']}", flush=True)
        time.sleep(2)
    stop_embedded_worker()
    missing = sorted(set(candidates) - reported)
    print(
        f"{len(reported)} of {len(candidates)} evaluated in {time.monotonic() - began:.0f} s"
        + (f"; still pending: {', '.join(missing)}" if missing else ""),
        flush=True,
    )


def command_compare(state: Path) -> None:
    actor = load_results(state / "actor.jsonl")
    cli = load_results(state / "verify.jsonl")
    print("| task | actor path | CLI | same status | same failed check | speedup over eager, actor / CLI |")
    print("| --- | --- | --- | --- | --- | --- |")
    same = both = 0
    for name, record in actor.items():
        other = cli.get(name)
        if other is None:
            print(f"| {name} | {record['status']} | (not run) | | | |")
            continue
        both += 1
        match = record["status"] == other["status"]
        same += match
        speed = [((r.get("speedups") or {}).get("eager")) for r in (record, other)]
        shown = " / ".join("-" if s is None else f"{s:.2f}" for s in speed)
        print(
            f"| {name} | {record['status']} | {other['status']} | {'yes' if match else 'NO'} | "
            f"{'yes' if record.get('failed_check') == other.get('failed_check') else 'no'} | {shown} |"
        )
    print(
        f"\n{same} of {both} candidates measured both ways have the same status; "
        f"every candidate has { {r['evaluations'] for r in actor.values()} } evaluation(s)."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "compare"))
    parser.add_argument("--state", default="var/harness-h100")
    parser.add_argument("--keys", default=",".join(DEFAULT_KEYS))
    parser.add_argument("--timeout-s", type=float, default=1500)
    args = parser.parse_args()
    state = Path(args.state).resolve()
    state.mkdir(parents=True, exist_ok=True)
    if args.command == "run":
        command_run(state, args.keys.split(","), args.timeout_s)
    else:
        command_compare(state)


if __name__ == "__main__":
    main()
