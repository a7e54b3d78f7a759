"""Internal details: what of a verification and a run only staff see, written once for every page,
socket, download, export and API route (as court.models.visibility is for whole objects).

The words, as everything here uses them:

- **internal**: who verified (the worker's host and slot: `Evaluation.worker`, `GpuWorker`), the
  host itself (its OS, platform and kernel version, the sandbox's set-up on it), filesystem paths,
  and the raw text of failures of ours: database, broker and model-server errors, our own Python
  exceptions and their tracebacks (`error_detail` on runs and evaluations).
- **public**: the evidence for a speedup. The device (GPU model, compute capability, driver, CUDA,
  torch, triton, Python), the harness version, the verdict, the check that decided it and its
  message, and a failure's sentence saying what happened and what to do (`OptimizationRun.error`,
  `Evaluation.reason`).

A field that is public holds public text when it is written: what a run or an evaluation stores
there is sent live to everyone watching, so nothing can be cut per viewer afterwards. The raw
text goes to `error_detail` and the log. The harness's own records (an evaluation's environment
and verdict) hold both and are cut down here when shown: `env_for` and `verdict_for` give staff
everything and anyone else the public part. Files made to be passed on (the bundle, the export)
always hold the public part.
"""

import re

# The environment's public keys (evaluation.harness.sandboxed.environment); any other key, such as
# `platform` (OS and kernel version) or `python_executable` (a path), is the host's.
PUBLIC_ENV_KEYS = (
    "device",
    "gpu",
    "compute_capability",
    "multiprocessors",
    "memory_bytes",
    "l2_cache_bytes",
    "driver",
    "cuda",
    "torch",
    "triton",
    "python",
    "cpu",
    "threads",
    "harness_version",
)

# An absolute path's folders (the worker's layout: its environment, build folders, sockets). The
# file's own name stays, so a compiler's message or a traceback still says which file.
_FOLDERS = re.compile(r"(?<![\w.~:/-])/(?:[\w.+@-]+/)+")


def without_paths(text: str) -> str:
    return _FOLDERS.sub(".../", text)


def public_env(env: dict) -> dict:
    return {key: value for key, value in (env or {}).items() if key in PUBLIC_ENV_KEYS}


def _without_paths_anywhere(value):
    if isinstance(value, str):
        return without_paths(value)
    if isinstance(value, dict):
        return {key: _without_paths_anywhere(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_paths_anywhere(item) for item in value]
    return value


def public_verdict(verdict: dict) -> dict:
    """The verdict without the host: its public environment, no paths, and the sandbox's state
    without the host's reason when it could not confine (bubblewrap's own error)."""
    shown = dict(verdict or {})
    if "env" in shown:
        shown["env"] = public_env(shown["env"])
    sandbox = shown.get("sandbox")
    if isinstance(sandbox, dict) and not sandbox.get("confined"):
        shown["sandbox"] = {key: value for key, value in sandbox.items() if key != "detail"}
    return _without_paths_anywhere(shown)


def shows_internal_details(user) -> bool:
    """Staff see every internal detail where they look; anyone else none."""
    return user is not None and user.is_staff


def env_for(user, evaluation) -> dict:
    return evaluation.env if shows_internal_details(user) else public_env(evaluation.env)


def verdict_for(user, evaluation) -> dict:
    return evaluation.verdict if shows_internal_details(user) else public_verdict(evaluation.verdict)


def error_detail_for(user, run_or_evaluation) -> str:
    """The raw error behind a run's or an evaluation's public one, for staff; "" for anyone else."""
    return run_or_evaluation.error_detail if shows_internal_details(user) else ""


def shown_to(user, evaluations) -> list:
    """The evaluations as `user` may see them on a page: `.shown_env` and `.shown_verdict`, and
    `.internal` (the worker and the raw error) for staff, None for anyone else."""
    staff = shows_internal_details(user)
    shown = list(evaluations)
    for evaluation in shown:
        evaluation.shown_env = env_for(user, evaluation)
        evaluation.shown_verdict = verdict_for(user, evaluation)
        evaluation.internal = {"worker": evaluation.worker, "error": error_detail_for(user, evaluation)} if staff else None
    return shown
