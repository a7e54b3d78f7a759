"""What the builtin optimizer says: its reasoning (the analysis, the ranking, the lessons of
earlier rounds) and its answer (which transformation, why, and the code). It says plainly that it
is a rule-based program, and states the numbers its choice rests on."""

from inference.backends.builtin.analysis.profile import ProblemProfile
from inference.backends.builtin.analysis.roofline import H100
from inference.backends.builtin.transformations import Assessment, Plan

INTRODUCTION = (
    "I am Kernel Court's builtin optimizer: a rule-based program, not a language model. I load the "
    "module on PyTorch's meta device in a separate process (shapes only: no data is allocated and no "
    "kernel runs), count its operations, FLOPs and bytes, estimate where an H100 would spend its time "
    "with a roofline model, and pick one transformation from a fixed catalogue. I do not write new "
    "algorithms; a model backend does that.\n\n"
)


def _size(count: float, unit: str) -> str:
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if count >= scale:
            return f"{count / scale:.2f} {prefix}{unit}"
    return f"{count:.0f} {unit}"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs"


def analysis_lines(profile: ProblemProfile, plan: Plan) -> list[str]:
    if not profile.ok:
        return [f"The analysis failed ({profile.error}), so I can only propose transformations that fit any module.\n"]
    roof = plan.roof
    assert roof is not None  # the plan of a profile that ran has its roofline (transformations.plan)
    lines = [
        f"Inputs: {', '.join(map(str, profile.inputs)) or 'none'}; outputs: {', '.join(map(str, profile.outputs)) or 'unknown'}; "
        f"parameters and buffers: {_size(profile.parameter_bytes, 'B')}.\n",
        "Operations as eager PyTorch runs them (aten ops, views left out):\n",
    ]
    for op in profile.ops[:12]:
        lines.append(f"- {op.name} ×{op.count} ({op.category}): {_size(op.flops, 'FLOP')}, {_size(op.bytes, 'B')} moved\n")
    if len(profile.ops) > 12:
        lines.append(f"- … and {len(profile.ops) - 12} more kinds of op\n")
    ridge = H100.fp32_flops / H100.memory_bandwidth
    bound = "compute-bound" if roof.arithmetic_intensity > ridge else "memory-bound"
    lines += [
        f"Totals: {_size(roof.flops, 'FLOP')}; {_size(roof.compulsory_bytes, 'B')} compulsory traffic (inputs, "
        f"parameters and outputs once each) against {_size(roof.unfused_bytes, 'B')} moved by eager kernels one at a "
        f"time; {roof.launches} kernel launches.\n",
        f"Arithmetic intensity: {roof.arithmetic_intensity:.1f} FLOP/byte of compulsory traffic (the H100's FP32 ridge "
        f"point is {ridge:.0f}), so at best it is {bound}.\n",
        f"Assumed peaks — {H100.describe()}.\n",
        f"Speed-of-light floor on H100: {_us(roof.speed_of_light_s)} (the larger of the arithmetic and the compulsory "
        f"traffic at peak). Eager estimate: {_us(roof.eager_estimate_s)}, {roof.launch_share:.0%} of it launch overhead.\n",
    ]
    if profile.epilogue is not None:
        lines.append(
            f"torch.fx finds a fusable epilogue: `{profile.epilogue.anchor}` → {' → '.join(profile.epilogue.op_names)}.\n"
        )
    lines += [f"Note: {note}.\n" for note in profile.notes]
    return lines


def ranking_lines(plan: Plan) -> list[str]:
    lines = []
    if plan.learned:
        lines.append("\nWhat earlier rounds measured:\n")
        lines += [f"- {lesson.text}\n" for lesson in plan.learned]
    lines.append("\nTransformations, by estimated saving on H100:\n")
    for index, assessment in enumerate(a for a in plan.ranked if a.applicable):
        status = " (tried already)" if assessment.transformation.key in plan.tried else ""
        adjustments = f" [{'; '.join(assessment.adjustments)}]" if assessment.adjustments else ""
        lines.append(f"{index + 1}. `{assessment.transformation.key}`{status}: {assessment.why}{adjustments}\n")
    not_applicable = [a for a in plan.ranked if not a.applicable]
    if not_applicable:
        lines.append("Not applicable: " + "; ".join(f"`{a.transformation.key}` ({a.why})" for a in not_applicable) + ".\n")
    choice = plan.choice
    if choice is None:
        lines.append("\nEvery applicable transformation has been tried.\n")
    else:
        lines.append(f"\nNext: `{choice.transformation.key}`, the highest-ranked one not tried yet.\n")
    return lines


def answer_text(choice: Assessment, code: str, plan: Plan) -> str:
    transformation = choice.transformation
    saving = f" I estimate it saves {_us(choice.saving_s)} per call on an H100" if choice.saving_s > 1e-8 else ""
    baseline = ""
    if transformation.family == "torch-compile":
        baseline = (
            " Note that the leaderboard also times the reference under torch.compile, so expect little "
            "gain against that baseline from this candidate alone."
        )
    return (
        f"## Candidate: {transformation.title} (`{transformation.key}`)\n\n"
        f"**What it does:** it {transformation.what}\n\n"
        f"**Why this one:** {choice.why}.{saving}; it ranks first among the transformations not tried yet"
        f"{' (see the lessons from earlier rounds above)' if plan.learned else ''}.{baseline}\n\n"
        f"**Precision:** {transformation.precision}.\n\n"
        f"**Off CUDA:** {transformation.off_cuda}\n\n"
        f"```python\n{code}```\n"
    )


def exhausted_text(plan: Plan) -> str:
    tried = ", ".join(f"`{key}`" for key in sorted(plan.tried)) or "none"
    return (
        "## No further candidate\n\n"
        f"Every transformation in my catalogue that applies to this module has been tried ({tried}). "
        "A model backend can go further: custom CUDA or Triton kernels for the main operation, "
        "algorithmic changes, or fusing across the matmul itself.\n"
    )
