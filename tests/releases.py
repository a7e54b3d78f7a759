"""Releases measured by the real harness on this CPU, for the tests of the release format, its import
and the audit: tiny problems and candidates of tests/harness, published in CUDA-L1's shape with
made-up claims, run through benchmarks/release_batch.py and packed as a release of arch `cpu`.

The claims are inputs (what a publisher says); every verdict is the harness's own.
"""

import gzip
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from evaluation.harness import release
from tests.harness.conftest import CANDIDATES, PROBLEMS, SMALL_LIMITS, SMALL_PLAN

REPO = Path(__file__).resolve().parent.parent
BATCH = REPO / "benchmarks" / "release_batch.py"
# The harness tests' small plan, with the profile: the kernels it lists are what the browser tests'
# kernel pages show (the platform's own verifications in the suite skip it, tests/suite_plan.py).
RELEASE_PLAN = {**SMALL_PLAN, "profile": True}

# (level, task, problem, candidate or None for CUDA-L1's placeholder string "None", published speedup over eager)
PUBLISHED = [
    (1, 1, "linear_relu", "honest_linear_relu", 1.05),
    (1, 2, "matmul", "hack_lazy_tensor", 17.8),
    (1, 3, "row_sums", "honest_row_sums", 40.0),
    (2, 1, "tiny_mean", "hack_tiny_outputs", 3.0),
    (2, 2, "relu", None, 7.2),
]


@dataclass(frozen=True)
class MeasuredRelease:
    published: Path  # the CUDA-L1 shaped file the candidates came from (import_problems reads it too)
    path: Path  # the release
    state: Path  # the batch's state folder
    batch_output: str


def published_file(folder: Path) -> Path:
    """The test entries as CUDA-L1 publishes them: one gzip JSON line per task, scores as claims."""
    path = folder / "h100.jsonl.gz"
    with gzip.open(path, "wt") as handle:
        for level, task, problem, candidate, claim in PUBLISHED:
            row = {
                "level_id": level,
                "task_id": task,
                "ref_code": (PROBLEMS / f"{problem}.py").read_text(),
                "custom_code": (CANDIDATES / f"{candidate}.py").read_text() if candidate else "None",
                "score_default": claim,
                "score_torch_compile_default": round(claim * 0.8, 3),
                "score_torch_compile_reduce_overhead": None,
                "score_cuda_graph": None,
                "score_cudnn": None,
            }
            handle.write(json.dumps(row) + "\n")
    return path


def run_batch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BATCH), *args], cwd=REPO, capture_output=True, text=True, timeout=900)


def batch_run_args(published: Path, state: Path, *extra: str, plan: dict = RELEASE_PLAN) -> list[str]:
    """`release_batch.py run` on the CPU over the published file, with the plan given."""
    return [
        "run",
        "--state",
        str(state),
        "--release",
        str(published),
        "--device",
        "cpu",
        "--arch",
        "cpu",
        "--parallel",
        "2",
        "--plan",
        json.dumps(plan),
        "--limits",
        json.dumps(SMALL_LIMITS),
        *extra,
    ]


def measure_release(folder: Path, *, name: str = "cpu-test") -> MeasuredRelease:
    """The batch on the CPU over every test entry, then packed."""
    published = published_file(folder)
    state = folder / "state"
    done = run_batch(*batch_run_args(published, state))
    assert done.returncode == 0, done.stderr[-3000:]
    path = folder / "releases" / f"{name}.jsonl.gz"  # a folder of releases alone, as data/releases/ is
    packed = run_batch("pack", "--state", str(state), "--name", name, "--out", str(path))
    assert packed.returncode == 0, packed.stderr[-3000:] + done.stdout[-3000:]
    return MeasuredRelease(published=published, path=path, state=state, batch_output=done.stdout)


def rewritten(source: Path, out: Path, *, harness_version: str | None = None, name: str | None = None, edit=None) -> Path:
    """Another release made from a measured one: its verdicts relabelled as another harness's (an
    older release), renamed, or edited entry by entry (`edit(entry_dict)`), then written and checked."""
    measured = release.read(source)
    header = dict(measured.header)
    if name:
        header["name"] = name
    entries = []
    for entry in measured.entries:
        line = {key: getattr(entry, key) for key in release.ENTRY_KEYS}
        if harness_version:
            line["verdict"] = {**line["verdict"], "harness_version": harness_version}
        if edit:
            edit(line)
        entries.append(line)
    if harness_version:
        header["harness"] = {**header["harness"], "version": harness_version}
    stamps = [entry["measured_at"] for entry in entries]
    header["measured"] = {"from": min(stamps), "to": max(stamps)}
    release.write(out, header, entries)
    return out
