"""Downloads: a kernel as a .py file, and a zip that re-runs its verification anywhere.

The zip holds the problem, the kernel, our verdicts as JSON, a copy of the harness and a script
that runs the harness CLI on them, so anyone with torch can check our numbers. It is made to be
passed on, so its verdicts are the public ones whoever downloads it (kernels.models.internal_details).
"""

import io
import json
import zipfile
from pathlib import Path

from kernels.models import Candidate
from kernels.models.internal_details import public_verdict

HARNESS_DIR = Path(__file__).resolve().parent.parent / "evaluation" / "harness"

VERIFY_SCRIPT = """#!/bin/sh
# Re-run Kernel Court's verification of this kernel. Needs Python with torch (and triton for
# Triton kernels). Pass --device cpu to check correctness without a GPU.
set -e
cd "$(dirname "$0")"
exec python -m evaluation.harness verify --problem problem.py --candidate kernel.py \\
    --device "${DEVICE:-cuda}" --baselines "${BASELINES:-eager,compile,compile-ro,cudagraph}" --json "$@"
"""

README = """Kernel Court: {title}

problem.py        the reference module ({label})
kernel.py         candidate #{pk} ({language}, {origin})
verdicts/*.json   our verdict on each architecture, as the harness wrote it (without our hosts' details)
verify.sh         re-runs the verification here:  sh verify.sh   (DEVICE=cpu sh verify.sh without a GPU)
evaluation/       the harness that produced the verdicts (harness version {version})

Page: {url}
"""


def kernel_filename(candidate: Candidate) -> str:
    problem = candidate.problem
    stem = f"l{problem.level}_t{problem.task}" if problem.level else f"problem{problem.pk}"
    return f"kernel_{stem}_{candidate.pk}.py"


def bundle(candidate: Candidate, *, page_url: str) -> bytes:
    from evaluation.harness import HARNESS_VERSION

    buffer = io.BytesIO()
    root = kernel_filename(candidate).removesuffix(".py")
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{root}/problem.py", candidate.problem.source)
        archive.writestr(f"{root}/kernel.py", candidate.code)
        for evaluation in candidate.evaluations.all():
            name = f"{root}/verdicts/{evaluation.arch}-harness{evaluation.harness_version}.json"
            archive.writestr(name, json.dumps(public_verdict(evaluation.verdict), indent=2, sort_keys=True))
        info = zipfile.ZipInfo(f"{root}/verify.sh")
        info.external_attr = 0o755 << 16
        archive.writestr(info, VERIFY_SCRIPT)
        archive.writestr(
            f"{root}/README.txt",
            README.format(
                title=candidate.problem.title or candidate.problem.label,
                label=candidate.problem.label,
                pk=candidate.pk,
                language=candidate.get_language_display(),
                origin=candidate.get_origin_display(),
                version=HARNESS_VERSION,
                url=page_url,
            ),
        )
        archive.writestr(f"{root}/evaluation/__init__.py", "")
        for path in sorted(HARNESS_DIR.rglob("*.py")):
            archive.write(path, f"{root}/evaluation/harness/{path.relative_to(HARNESS_DIR)}")
    return buffer.getvalue()
