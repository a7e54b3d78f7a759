"""Load test of the job path: many candidates enqueued at once, CPU worker processes, Redis + PostgreSQL.

Every candidate must end with exactly one Evaluation, run once. The report gives the throughput
and, per job, the harness's own time beside what the platform adds: the worker's claim, verdict
write and progress messages inside the job, and the gap between one job's end and the next one's
start on the same worker (the broker's hand-over).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kernel_court_load REDIS_URL=redis://127.0.0.1:6379/14 \\
        .venv/bin/python benchmarks/load_cpu_workers.py --candidates 500 --workers 2 --out var/load.json

The database must be a dedicated one whose name ends in `_load` (it is created if missing and its
candidates are deleted first); the Redis database is flushed.
"""

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from services import REPO, require_services, start, stop, summary

sys.path.insert(0, str(REPO))

PROBLEM = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 3.0

def get_inputs():
    return [torch.randn(256, 256)]

def get_init_inputs():
    return []
"""

# An honest candidate; each one differs by a comment so that every one is a distinct candidate.
CANDIDATE = """import torch
import torch.nn as nn

# load test candidate {index}
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp_min(x, 0.0).mul_(3.0)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout-s", type=float, default=5400)
    parser.add_argument("--out", default="var/load.json")
    parser.add_argument(
        "--harness-plan",
        default="",
        help="the workers' COURT_HARNESS_PLAN (JSON); default: the "
        "harness's own plan. The job path is the same either way; a lighter plan only shortens each job.",
    )
    args = parser.parse_args()

    _, redis_url = require_services()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["COURT_EMBEDDED_WORKER"] = "false"
    import django

    django.setup()
    import redis
    from django.core.management import call_command
    from django.db import transaction

    from court.models import Candidate, Evaluation, Problem
    from court.source import normalized_source_hash, source_hash
    from verification.models import GpuWorker

    call_command("migrate", verbosity=0)
    Candidate.objects.all().delete()
    Problem.objects.all().delete()
    GpuWorker.objects.all().delete()
    redis.Redis.from_url(redis_url).flushdb()

    log_dir = REPO / "var" / "load"
    log_dir.mkdir(parents=True, exist_ok=True)
    workers = [
        start(
            [sys.executable, "manage.py", "verification_worker", "--arch", "cpu"],
            log_dir / f"worker-{index}.log",
            COURT_ROLE="worker",
            CUDA_VISIBLE_DEVICES="",
            COURT_VAR_DIR=str(log_dir / "var"),
            COURT_HARNESS_PLAN=args.harness_plan or "{}",
        )
        for index in range(args.workers)
    ]
    try:
        deadline = time.monotonic() + 120
        while GpuWorker.objects.live().filter(arch="cpu").count() < args.workers:
            if time.monotonic() > deadline or any(w.poll() is not None for w in workers):
                sys.exit(f"the workers did not register; see {log_dir}")
            time.sleep(0.5)

        problem = Problem.objects.create(
            title="Load test: ReLU times three", source=PROBLEM, normalized_hash=normalized_source_hash(PROBLEM)
        )
        began = time.time()
        with transaction.atomic():  # every job is sent at commit: all of them at once
            for index in range(args.candidates):
                code = CANDIDATE.format(index=index)
                Candidate.objects.create(
                    problem=problem,
                    code=code,
                    source_hash=source_hash(code),
                    origin=Candidate.Origin.PERSON,
                    language=Candidate.Language.PYTORCH,
                )
        enqueued = time.time()
        print(f"{args.candidates} candidates saved and their jobs sent in {enqueued - began:.1f} s", flush=True)

        deadline = time.monotonic() + args.timeout_s
        while True:
            pending = Evaluation.objects.filter(status__in=Evaluation.PENDING).count()
            if pending == 0 or time.monotonic() > deadline:
                break
            print(f"{time.time() - enqueued:7.0f} s: {pending} pending", flush=True)
            time.sleep(30)
    finally:
        stop(workers)

    evaluations = list(Evaluation.objects.filter(candidate__problem=problem).order_by("started_at"))
    per_candidate = Counter(e.candidate_id for e in evaluations)
    finished = [e for e in evaluations if e.finished_at and e.started_at and e.harness_seconds is not None]
    last = max(e.finished_at.timestamp() for e in finished)
    in_job = [(e.finished_at - e.started_at).total_seconds() - e.harness_seconds for e in finished]
    by_worker = defaultdict(list)
    for e in finished:
        by_worker[e.worker].append(e)
    hand_over = []
    for jobs in by_worker.values():
        jobs.sort(key=lambda e: e.started_at)
        hand_over += [(b.started_at - a.finished_at).total_seconds() for a, b in zip(jobs, jobs[1:])]
    harness = [e.harness_seconds for e in finished]
    result = {
        "candidates": args.candidates,
        "workers": args.workers,
        "harness_plan": json.loads(args.harness_plan or "{}"),
        "cores": os.cpu_count(),
        "evaluations": len(evaluations),
        "candidates_with_one_evaluation": sum(1 for n in per_candidate.values() if n == 1),
        "candidates_without_evaluation": args.candidates - len(per_candidate),
        "run_more_than_once": sum(1 for e in evaluations if e.attempts > 1),
        "pending_at_the_end": sum(1 for e in evaluations if e.is_pending),
        "statuses": dict(Counter(e.status for e in evaluations)),
        "enqueue_s": round(enqueued - began, 2),
        "wall_s": round(last - enqueued, 1),
        "throughput_jobs_per_min": round(60 * len(finished) / (last - enqueued), 2),
        "harness_s": summary(harness),
        "in_job_overhead_s": summary(in_job),
        "hand_over_s": summary(hand_over) if hand_over else None,
        "overhead_share_of_harness": round(
            (statistics.median(in_job) + (statistics.median(hand_over) if hand_over else 0)) / statistics.median(harness), 4
        ),
        "jobs_per_worker": {name: len(jobs) for name, jobs in by_worker.items()},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
