"""The live events the platform publishes, and the Channels groups they go to.

Workers publish evaluation progress; the run loop publishes reasoning and candidates; pages
subscribe by joining a group. Names live here so publisher and consumer agree on them.
"""


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


def candidate_group(candidate_id: int) -> str:
    return f"candidate.{candidate_id}"


def leaderboard_group(arch: str) -> str:
    return f"leaderboard.{arch}"


def evaluation_event(evaluation) -> dict:
    """The payload of an evaluation's progress, as a page renders it."""
    return {
        "kind": "evaluation",
        "evaluation": evaluation.pk,
        "candidate": evaluation.candidate_id,
        "arch": evaluation.arch,
        "status": evaluation.status,
        "stage": evaluation.stage,
        "reason": evaluation.reason,
        "speedups": {
            "eager": evaluation.speedup_eager,
            "compile": evaluation.speedup_compile,
            "compile-ro": evaluation.speedup_compile_ro,
            "cudagraph": evaluation.speedup_cudagraph,
        },
        "times_ms": evaluation.times_ms(),
        # What each speedup says once its interval is read: a page shows "no measurable difference"
        # where it says so (court.models.evaluations.Speedup), never the number as a win.
        "differences": {baseline: evaluation.speedup(baseline).difference for baseline in evaluation.SPEEDUP_FIELDS},
        "precision_tier": evaluation.precision_tier,
        "flags": evaluation.flags,
    }
