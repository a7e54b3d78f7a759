"""The leaderboard's export: one architecture's best kernels in CUDA-L1's release shape, one
listed problem a line, with what we measured besides; served from its snapshot.
"""

import json

from django.core.serializers.json import DjangoJSONEncoder

from court.leaderboard.query import SPEEDUP_COLUMNS, best_per_problem
from court.leaderboard.snapshots import snapshot
from court.models import Candidate, Evaluation, Problem
from court.models.internal_details import public_env


def export_lines(arch: str, *, site_url: str = "") -> list[dict]:
    """The leaderboard as CUDA-L1's release shape: one line per listed problem, plus our fields.

    `score_*` are our measured speedups (where CUDA-L1 published theirs); `custom_code` is null
    where no kernel is verified here. Everything we measured besides is under `measured`, with the
    environment's public part only: the file is made to be passed on.
    """
    best = {row.candidate.problem_id: row for row in best_per_problem(arch)}
    codes = dict(Candidate.objects.filter(pk__in=[row.candidate_id for row in best.values()]).values_list("pk", "code"))
    envs = dict(Evaluation.objects.filter(pk__in=[row.pk for row in best.values()]).values_list("pk", "env"))
    lines = []
    for problem in Problem.objects.listed().order_by("level", "task", "id"):
        row = best.get(problem.pk)
        line = {
            "level_id": problem.level,
            "task_id": problem.task,
            "ref_code": problem.source,
            "custom_code": codes[row.candidate_id] if row else None,
            "score_default": row.speedup_eager if row else None,
            "score_torch_compile_default": row.speedup_compile if row else None,
            "score_torch_compile_reduce_overhead": row.speedup_compile_ro if row else None,
            "score_cuda_graph": row.speedup_cudagraph if row else None,
            "score_cudnn": None,
        }
        if row:
            line["measured"] = {
                "arch": arch,
                "problem_id": problem.pk,
                "kernel_id": row.candidate_id,
                "evaluation_id": row.pk,
                "harness_version": row.harness_version,
                "language": row.candidate.language,
                "origin": row.candidate.origin_label or row.candidate.origin,
                "precision_tier": row.precision_tier,
                "flags": row.flags,
                "candidate_ms": row.candidate_ms,
                "max_rel_error": row.max_rel_error,
                "speedup_intervals": {baseline: row.speedup_interval(baseline) for baseline in SPEEDUP_COLUMNS},
                "beats": {baseline: row.beats(baseline) for baseline in SPEEDUP_COLUMNS},
                "env": public_env(envs[row.pk]),
                "degenerate_problem": bool(problem.degenerate),
                "url": f"{site_url}{row.candidate.get_absolute_url()}",
            }
        lines.append(line)
    return lines


def export_body(arch: str, *, site_url: str = "") -> str:
    """The export as served: JSONL, one problem a line."""
    return snapshot(
        f"export:{arch}:{site_url}",
        lambda: "".join(json.dumps(line, cls=DjangoJSONEncoder) + "\n" for line in export_lines(arch, site_url=site_url)),
        str,
    )
