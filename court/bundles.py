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
# Re-run Kernel Court's verification of this kernel, then compare with what we recorded. Needs
# Python with torch (and triton for Triton kernels). DEVICE=cpu checks correctness without a GPU.
set -e
cd "$(dirname "$0")"
python -m evaluation.harness verify --problem problem.py --candidate kernel.py \\
    --device "${DEVICE:-cuda}" --baselines "${BASELINES:-eager,compile,compile-ro,cudagraph}" --json "$@" > measured.json
python compare.py measured.json
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
    agree = None
    for path in sorted(Path("verdicts").glob("*.json")):
        recorded = json.loads(path.read_text())
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
verify.sh         re-runs the verification here:  sh verify.sh   (DEVICE=cpu sh verify.sh without a GPU)
compare.py        sets what verify.sh measured (measured.json) beside our verdicts and says whether they agree
evaluation/       the harness that produced the verdicts (harness version {version})

Page: {url}
"""


def kernel_filename(candidate: Candidate) -> str:
    problem = candidate.problem
    stem = f"l{problem.level}_t{problem.task}" if problem.level else f"problem{problem.pk}"
    return f"kernel_{stem}_{candidate.pk}.py"


def bundle(candidate: Candidate, *, page_url: str) -> bytes:
    from evaluation.harness import HARNESS_VERSION

    root = kernel_filename(candidate).removesuffix(".py")
    files = {
        "problem.py": candidate.problem.source,
        "kernel.py": candidate.code,
        "verify.sh": VERIFY_SCRIPT,
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
