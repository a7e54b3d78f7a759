"""The verification harness: decides whether a candidate is right and how fast it is.

Plain Python + torch (+ triton). It never imports Django, so it runs alone on a GPU box. The
parent side (this package's import) is standard library only; torch loads in the sandboxed
processes it starts.

Entry points, used by the CLI and the Dramatiq worker alike:

    verify(problem_source, candidate_source, *, device="cpu", baselines=("eager",), limits=None,
           on_progress=None, baseline_cache_dir=None, proof_inputs_source=None, plan=None) -> Verdict
        Runs the candidate in its sandboxed process against the problem in another and returns the
        verdict (verdict.py). `on_progress(stage)` is called from this process with "building",
        "checking", "timing", "done". `proof_inputs_source` defines `get_inputs()` supplying extra
        inputs a hack reporter says break the kernel. `limits` (limits.Limits or a dict of its
        fields) bounds time and memory; `plan` (limits.Plan or a dict) sets trial and sample counts.
        Empty `baselines` checks correctness only, with no timing.

    inspect_problem(problem_source, *, device="cpu", limits=None) -> dict
        Runs the problem alone, sandboxed: degenerate (and why), output scale, size constants,
        FLOPs and bytes, reference precision.

CLI: python -m evaluation.harness verify --problem P.py --candidate C.py [--device cpu|cuda]
     [--baselines eager,compile,compile-ro,cudagraph] [--json];  python -m evaluation.harness inspect --problem P.py
"""

from evaluation.harness.limits import Limits, Plan
from evaluation.harness.pipeline import inspect_problem, probe, verify
from evaluation.harness.verdict import BASELINES, HARNESS_VERSION, STATUSES, Verdict

__all__ = ["BASELINES", "HARNESS_VERSION", "STATUSES", "Limits", "Plan", "Verdict", "inspect_problem", "probe", "verify"]
