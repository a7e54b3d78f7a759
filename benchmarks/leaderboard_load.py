"""Load test of the leaderboard: its page, API and export at 20,000 evaluations, over real HTTP.

Fills a dedicated PostgreSQL database with KernelBench's 250 problems (the CUDA-L1 release's
reference code) and `--evaluations` finished evaluations of the current harness on one
architecture, with verdicts of a real verdict's shape, then serves it with daphne from each code
tree asked for and times GETs from one client: p50/p90/p99 of `--requests` after one warm-up. For
this checkout it also times the first request after a change (the leaderboard computed again),
`--changes` times per route. `--before REV` serves the same database from the code of REV too (a
`git archive` of it under /tmp), in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kc_board_load REDIS_URL=redis://127.0.0.1:6379/12 \\
        .venv/bin/python benchmarks/leaderboard_load.py --before b90687b --out var/leaderboard_load.json

The database must be a dedicated one whose name ends in `_load`: it is dropped and made again.
The fill writes rows directly (bulk inserts, no verification), as an import of measured verdicts would.
"""

import argparse
import gzip
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

from services import REPO, require_services, stop, summary

sys.path.insert(0, str(REPO))

RELEASE = REPO / "data" / "cuda-l1" / "h100.jsonl.gz"
ARCH = "h100"
ROUTES = {
    "leaderboard page": f"/leaderboard/{ARCH}/",
    "leaderboard page, sorted and filtered": f"/leaderboard/{ARCH}/?level=2&sort=eager",
    "leaderboard API": f"/api/leaderboard/{ARCH}/",
    "leaderboard export": f"/api/leaderboard/{ARCH}/export.jsonl",
    "problems list": "/problems/",
}
# The old code computes the leaderboard on every request (tens of seconds each at 20,000): it is
# timed on the routes the issue names, and the problem list.
BEFORE_ROUTES = ["leaderboard page", "leaderboard API", "leaderboard export", "problems list"]
# A kernel of ours on the GPU launches a few of these; the names fill the verdict as a real one's do.
KERNEL_NAMES = ["fused_gemm_bias_relu", "ampere_sgemm_128x64_tn", "vectorized_elementwise_kernel", "reduce_kernel"]
FLAGS = ["host_bound", "reduced_precision", "same_kernels_as_reference", "hidden_work", "shape_specialized"]


def recreate_database(url: str) -> None:
    import psycopg

    name = urlparse(url).path.lstrip("/")
    if not name.endswith("_load"):
        sys.exit(f"DATABASE_URL names {name!r}: use a dedicated database whose name ends in _load (it is dropped).")
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as connection:
        connection.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name])
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')


def verdict(rng: random.Random, status: str, speedups: dict, intervals: dict, flags: list[str]) -> dict:
    """A verdict of harness 10's shape and size: every check, three measures against four baselines."""
    from evaluation.harness import HARNESS_VERSION
    from evaluation.harness.checks import CHECKS

    def side(ms: float) -> dict:
        return {"median_ms": ms, "iqr_ms": ms * 0.02, "samples": rng.randint(200, 2000)}

    candidate_ms = rng.uniform(0.01, 20.0)
    baselines = {name: side(candidate_ms * (value or 1.0)) for name, value in speedups.items()}
    measure = {
        "candidate": side(candidate_ms),
        "baselines": baselines,
        "speedups": speedups,
        "speedup_intervals": intervals,
        "what": "calls back to back, each on fresh inputs",
    }
    return {
        "status": status,
        "harness_version": HARNESS_VERSION,
        "reason": "All checks passed." if status == "verified" else "outputs_match_reference: max rel error 0.31 > 0.01",
        "checks": [{"name": check.name, "passed": True, "detail": f"{check.name}: nothing found"} for check in CHECKS],
        "correctness": {
            "trials": 3,
            "inputs_per_trial": 2,
            "checked_calls": 40,
            "max_abs_error": 1e-6,
            "max_rel_error": 2e-6,
            "precision_tier": "exact-fp32",
        },
        "timing": {
            "headline": "steady_state",
            "method": "gated bursts, cache flushed between calls",
            "candidate": side(candidate_ms),
            "baselines": baselines,
            "speedups": speedups,
            "speedup_intervals": intervals,
            "measures": {"steady_state": measure, "latency": measure, "device_time": measure},
            "stopped_by": "converged",
        },
        "kernels": {
            "candidate": [{"name": name, "count": rng.randint(1, 4)} for name in KERNEL_NAMES],
            "reference": [{"name": name, "count": 1} for name in KERNEL_NAMES[1:]],
        },
        "flags": flags,
        "flag_details": {flag: f"{flag}: as measured" for flag in flags},
        "env": {"gpu": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "torch": "2.11.0+cu130", "python": "3.12.3"},
    }


def fill(evaluations: int, seed: int) -> dict:
    """KernelBench's problems and `evaluations` evaluations on ARCH, 90% verified."""
    from django.db import connection
    from django.utils import timezone

    from court.models import Candidate, Evaluation
    from court.services import import_kernelbench_problem
    from court.source import source_hash
    from evaluation.harness import HARNESS_VERSION

    rng = random.Random(seed)
    began = time.monotonic()
    with gzip.open(RELEASE, "rt", encoding="utf-8") as lines:
        entries = [json.loads(line) for line in lines]
    problems = []
    for entry in entries:
        problem, _ = import_kernelbench_problem(level=entry["level_id"], task=entry["task_id"], source=entry["ref_code"])
        problems.append((problem, entry.get("custom_code") or ""))
    share, left = divmod(evaluations, len(problems))
    for number, (problem, custom) in enumerate(problems):
        code = custom if custom and custom != "None" else "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
        count = share + (1 if number < left else 0)
        candidates = Candidate.objects.bulk_create(
            [
                Candidate(
                    problem=problem,
                    code=f"{code}\n# variant {index}\n",
                    source_hash=source_hash(f"{code}\n# variant {index}\n"),
                    origin=Candidate.Origin.IMPORT,
                    origin_label=rng.choice(["cuda-l1", "builtin", "person"]),
                    language=Candidate.Language.CUDA,
                )
                for index in range(count)
            ]
        )
        rows = []
        for candidate in candidates:
            status = "verified" if rng.random() < 0.9 else "incorrect"
            speedups = {name: round(rng.lognormvariate(0.2, 0.6), 4) for name in ("eager", "compile", "compile-ro", "cudagraph")}
            intervals = {name: [round(value * 0.97, 4), round(value * 1.03, 4)] for name, value in speedups.items()}
            flags = rng.sample(FLAGS, rng.choice([0, 0, 0, 1, 2]))
            rows.append(
                Evaluation(
                    candidate=candidate,
                    arch=ARCH,
                    harness_version=HARNESS_VERSION,
                    status=status,
                    stage="done",
                    verdict=verdict(rng, status, speedups, intervals, flags),
                    precision_tier="exact-fp32",
                    candidate_ms=rng.uniform(0.01, 20.0),
                    speedup_eager=speedups["eager"] if status == "verified" else None,
                    speedup_compile=speedups["compile"] if status == "verified" else None,
                    speedup_compile_ro=speedups["compile-ro"] if status == "verified" else None,
                    speedup_cudagraph=speedups["cudagraph"] if status == "verified" else None,
                    flags=flags,
                    env={"gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0+cu130"},
                    finished_at=timezone.now(),
                )
            )
        Evaluation.objects.bulk_create(rows, batch_size=500)
    # A database in service has its planner's statistics; a bulk fill has none until autovacuum runs.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {
        "problems": len(problems),
        "evaluations": Evaluation.objects.count(),
        "verified": Evaluation.objects.filter(status="verified").count(),
        "fill_s": round(time.monotonic() - began, 1),
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve(tree: Path, work: Path, name: str) -> tuple[subprocess.Popen, str]:
    """daphne from `tree` on the benchmark's database, its static files collected first."""
    env = {
        "COURT_STATIC_ROOT": str(work / f"static-{name}"),
        "COURT_VAR_DIR": str(work / f"var-{name}"),
        "COURT_EMBEDDED_WORKER": "false",
        "DJANGO_DEBUG": "false",
        "DB_CONN_MAX_AGE": "60",
        "LOG_LEVEL": "WARNING",
        # One client asks hundreds of times a minute: the throttles would answer 429.
        "COURT_THROTTLE_ANON": "1000000/min",
        "COURT_THROTTLE_USER": "1000000/min",
    }
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
        cwd=tree,
        env=dict(os.environ, **env),
        check=True,
    )
    port = free_port()
    command = [sys.executable, "-m", "daphne", "--bind", "127.0.0.1", "--port", str(port), "config.asgi:application"]
    process = subprocess.Popen(
        command,
        cwd=tree,
        env=dict(os.environ, **env),
        stdout=open(work / f"daphne-{name}.log", "w"),  # noqa: SIM115  (daphne writes it while it runs)
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, f"http://127.0.0.1:{port}"
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"daphne from {tree} did not start: see {work / f'daphne-{name}.log'}")
            time.sleep(0.2)


def timed_get(session, url: str) -> float:
    began = time.perf_counter()
    response = session.get(url)
    elapsed = time.perf_counter() - began
    if response.status_code != 200:
        sys.exit(f"{url} answered {response.status_code}: {response.text[:300]}")
    return elapsed


def measure(base: str, requests_per_route: int, *, routes: list[str], changes: int = 0) -> dict:
    """Per route: the first request (which computes), then `requests_per_route` more, one at a time;
    with `changes`, the first request after each of that many changes of the leaderboard."""
    import requests

    from court import leaderboard

    results = {}
    with requests.Session() as session:
        for name in routes:
            path = ROUTES[name]
            first = timed_get(session, base + path)
            samples = [timed_get(session, base + path) for _ in range(requests_per_route)]
            size = len(session.get(base + path).content)
            result = {"first_ms": round(first * 1000, 1), "bytes": size, **summary(samples, scale=1000, digits=1)}
            if changes:
                after_change = []
                for _ in range(changes):
                    leaderboard.changed()  # what a verdict or a curation does, in its own transaction here
                    after_change.append(timed_get(session, base + path))
                result["after_a_change"] = summary(after_change, scale=1000, digits=1)
            results[name] = result
            print(f"  {name}: {result}", flush=True)
    return results


def tree_of(revision: str, work: Path) -> Path:
    """The code of `revision`, as `git archive` gives it, beside this checkout's data."""
    tree = Path(tempfile.gettempdir()) / f"kc-leaderboard-{revision}"
    if not tree.exists():
        tree.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", revision], cwd=REPO, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evaluations", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=300, help="per route, for this checkout")
    parser.add_argument("--before", default="", help="also serve the same database from this revision's code")
    parser.add_argument("--before-requests", type=int, default=5, help="per route, for --before's code")
    parser.add_argument("--changes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--out", default="var/leaderboard_load.json")
    args = parser.parse_args()

    database_url, _ = require_services()
    recreate_database(database_url)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["COURT_EMBEDDED_WORKER"] = "false"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    report = {"data": fill(args.evaluations, args.seed)}
    print(f"filled: {report['data']}", flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    report["commit"] = commit

    work = Path(tempfile.mkdtemp(prefix="kc-leaderboard-load-"))
    servers = []
    if args.before:
        print(f"code of {args.before}:", flush=True)
        process, base = serve(tree_of(args.before, work), work, "before")
        servers.append(process)
        report["before"] = {"revision": args.before, "routes": measure(base, args.before_requests, routes=BEFORE_ROUTES)}
        stop([process])
    print(f"this checkout ({commit}):", flush=True)
    process, base = serve(REPO, work, "after")
    servers.append(process)
    try:
        report["after"] = {"revision": commit, "routes": measure(base, args.requests, routes=list(ROUTES), changes=args.changes)}
    finally:
        stop(servers)

    if args.before:
        before, after = report["before"]["routes"], report["after"]["routes"]
        report["ratios_p50"] = {name: round(before[name]["median"] / after[name]["median"], 1) for name in BEFORE_ROUTES}
        report["ratios_p99"] = {name: round(before[name]["p99"] / after[name]["p99"], 1) for name in BEFORE_ROUTES}
    out = REPO / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
