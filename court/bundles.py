"""Downloads: a kernel as a .py file, and a zip that re-runs its verification anywhere.

The zip holds the problem, the kernel, our verdicts as JSON, a copy of the harness and a script
that runs the harness CLI on them and sets its verdict beside ours, so anyone with torch can check
our numbers. It is made to be
passed on, so its verdicts are the public ones whoever downloads it (court.models.internal_details).
"""

import io
import json
import zipfile
from pathlib import Path

from court.models import Candidate
from court.models.internal_details import public_verdict

HARNESS_DIR = Path(__file__).resolve().parent.parent / "evaluation" / "harness"

VERIFY_SCRIPT = """#!/bin/sh
# Re-run Kernel Court's verification of this kernel, then compare with what we recorded. Needs what
# README.txt lists, checked first. DEVICE=cpu checks correctness without a GPU. Exits 0 only where the
# verification ran and agrees with ours.
set -e
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
"$PYTHON" requirements.py "${DEVICE:-cuda}" || exit 3
if [ -n "${UNCONFINED:-}" ]; then set -- --limits '{"require_sandbox": false}' "$@"; fi
"$PYTHON" -m evaluation.harness verify --problem problem.py --candidate kernel.py \\
    --device "${DEVICE:-cuda}" --baselines "${BASELINES:-eager,compile,compile-ro,cudagraph}" --json "$@" > measured.json
"$PYTHON" compare.py measured.json
"""

# What verify.sh needs, checked before anything runs: each missing piece named with how to get it.
REQUIREMENTS_SCRIPT = """\"\"\"What verify.sh needs, checked before the harness runs: exit 3 and say what to install.\"\"\"

import importlib.util
import os
import shutil
import sys

device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
missing = []
if sys.version_info < (3, 11):
    missing.append(f"Python 3.11 or newer (this is {sys.version.split()[0]}); PYTHON=/path/to/python3.11 sh verify.sh")
if importlib.util.find_spec("torch") is None:
    missing.append("torch: pip install torch (a CUDA build for a GPU: https://pytorch.org/get-started/locally/)")
elif device == "cuda":
    import torch

    if not torch.cuda.is_available():
        missing.append(
            f"a CUDA GPU torch can see (torch {torch.__version__} sees none); DEVICE=cpu sh verify.sh checks it on the CPU"
        )
if "triton" in open("kernel.py").read() and importlib.util.find_spec("triton") is None:
    missing.append("triton, which this kernel imports: pip install triton")
if shutil.which("bwrap") is None and not os.environ.get("UNCONFINED"):
    missing.append(
        "bubblewrap, the sandbox the kernel runs in: apt-get install bubblewrap (or UNCONFINED=1 sh verify.sh to run "
        "the kernel's code unconfined, at your own risk)"
    )
if missing:
    print("verify.sh cannot run here yet; install:", file=sys.stderr)
    for item in missing:
        print(f"  - {item}", file=sys.stderr)
    sys.exit(3)
"""

# Read by people as much as run: standard library only, so it runs wherever the harness does.
COMPARE_SCRIPT = """\"\"\"Set the verdict just measured (measured.json) beside the ones Kernel Court recorded (verdicts/).

They agree when the status is the same and, measured on the same device model, every speedup is
within TOLERANCE of ours (timings on another GPU, or a CPU, are shown but not compared).
\"\"\"

import json
import sys
from pathlib import Path

TOLERANCE = 0.10


def device(verdict):
    env = verdict.get("env") or {}
    return env.get("gpu") or env.get("device") or "unknown device"


def speedups(verdict):
    return (verdict.get("timing") or {}).get("speedups") or {}


def main(measured_path):
    measured = json.loads(Path(measured_path).read_text())
    here = device(measured)
    print(f"measured here on {here}: {measured.get('status')}  {measured.get('reason', '')}")
    if measured.get("status") != "verified" and measured.get("log_excerpt"):
        print("its log ends:\\n" + "\\n".join(measured["log_excerpt"].strip().splitlines()[-12:]))
    agree = None
    statuses = set()
    for path in sorted(Path("verdicts").glob("*.json")):
        recorded = json.loads(path.read_text())
        statuses.add(recorded.get("status"))
        same_device = device(recorded) == here
        print(f"recorded {path.stem} on {device(recorded)}: {recorded.get('status')}  {recorded.get('reason', '')}")
        differences = [] if recorded.get("status") == measured.get("status") else ["status"]
        for name, ours in sorted(speedups(recorded).items()):
            theirs = speedups(measured).get(name)
            shown = "not measured" if theirs is None else f"{theirs:.3f}x"
            print(f"    {name:12} recorded {ours:.3f}x   here {shown}")
            if same_device and (theirs is None or abs(theirs / ours - 1) > TOLERANCE):
                differences.append(name)
        if same_device:
            agree = not differences if agree is None else agree and not differences
            print("    agrees with ours" if not differences else f"    DIFFERS from ours: {', '.join(differences)}")
    if agree is None:
        print(f"No verdict of ours was measured on {here}: compare the statuses above; speedups differ by device.")
    if statuses and measured.get("status") not in statuses:
        # A status is the same on every device: a kernel verified by us and not here (or the other way) differs.
        print(f"DIFFERS: {measured.get('status')} here, {', '.join(sorted(map(str, statuses)))} in our verdicts")
        return 1
    return 0 if agree is not False else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "measured.json"))
"""

# Every entry's time and mode are fixed and the entries sorted: a kernel's bundle is the same bytes
# at every download until its verdicts change.
FIXED_TIME = (1980, 1, 1, 0, 0, 0)

README = """Kernel Court: {title}

problem.py        the reference module ({label})
kernel.py         candidate #{pk} ({language}, {origin})
verdicts/*.json   our verdict on each architecture, as the harness wrote it (without our hosts' details)
verify.sh         re-runs the verification here:  sh verify.sh   (DEVICE=cpu sh verify.sh without a GPU);
                  exits 0 only where it ran and agrees with ours, 3 where something below is missing
requirements.py   what verify.sh checks first
compare.py        sets what verify.sh measured (measured.json) beside our verdicts and says whether they agree
evaluation/       the harness that produced the verdicts (harness version {version})

Needs: Python 3.11 or newer; torch (a CUDA build and a GPU it can see, or DEVICE=cpu); triton where
the kernel imports it; bubblewrap (apt-get install bubblewrap), the sandbox the kernel's code runs in
(UNCONFINED=1 runs it without one, at your own risk).

Page: {url}
"""


def kernel_filename(candidate: Candidate) -> str:
    problem = candidate.problem
    stem = f"l{problem.level}_t{problem.task}" if problem.level else f"problem{problem.pk}"
    return f"kernel_{stem}_{candidate.pk}.py"


def bundle(candidate: Candidate, *, page_url: str) -> bytes:
    from evaluation.harness import HARNESS_VERSION

    root = kernel_filename(candidate).removesuffix(".py")
    files: dict[str, str | bytes] = {
        "problem.py": candidate.problem.source,
        "kernel.py": candidate.code,
        "verify.sh": VERIFY_SCRIPT,
        "requirements.py": REQUIREMENTS_SCRIPT,
        "compare.py": COMPARE_SCRIPT,
        "README.txt": README.format(
            title=candidate.problem.title or candidate.problem.label,
            label=candidate.problem.label,
            pk=candidate.pk,
            language=candidate.get_language_display(),
            origin=candidate.get_origin_display(),
            version=HARNESS_VERSION,
            url=page_url,
        ),
    }
    for evaluation in candidate.evaluations.all():
        name = f"verdicts/{evaluation.arch}-harness{evaluation.harness_version}.json"
        files[name] = json.dumps(public_verdict(evaluation.verdict), indent=2, sort_keys=True)
    # The harness's package as it is in the repository, its top-level package's own __init__ included.
    for path in [HARNESS_DIR.parent / "__init__.py", *HARNESS_DIR.rglob("*")]:
        if path.is_file() and "__pycache__" not in path.parts:
            files[path.relative_to(HARNESS_DIR.parent.parent).as_posix()] = path.read_bytes()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(f"{root}/{name}", date_time=FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o755 if name == "verify.sh" else 0o644) << 16
            archive.writestr(info, files[name])
    return buffer.getvalue()
