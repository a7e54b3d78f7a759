"""The builtin optimizer's catalogue of transformations, and how it ranks them for a problem.

Each transformation is judged by the saving it could bring on an H100 according to the roofline
model (`inference.backends.builtin.analysis.roofline`): launches removed, memory passes fused away, faster math.
The estimates are coarse and say so; their job is the order of the rounds, not a prediction.
Earlier rounds' verdicts adjust the order: a family that failed or ran slower than eager is
demoted, one that was fast has its siblings promoted, and nothing is proposed twice.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from inference.backends.builtin.analysis.profile import CONVOLUTION, MATMUL, POINTWISE, ProblemProfile
from inference.backends.builtin.analysis.roofline import H100, Roofline, op_time, roofline
from inference.backends.builtin.candidate_code import (
    render_body,
    render_candidate,
    render_epilogue_body,
    transformation_of,
)
from inference.prompts.history import VERIFIED, PriorCandidate

FUSIBLE = {POINTWISE, "normalization", "reduction", "data movement", "pooling"}
# Share of the fusible traffic and launches Inductor is assumed to remove; a rule of thumb.
COMPILE_FUSED_SHARE = 0.5
# Share of convolution time channels-last layouts and cuDNN autotuning are assumed to save.
CHANNELS_LAST_SHARE = 0.15
# A precision change is worth less than the same saving at full precision.
PRECISION_DISCOUNT = 0.5
# The leaderboard also times the reference under torch.compile, which a compile candidate can at
# best match; its saving counts for less.
COMPILE_BASELINE_DISCOUNT = 0.6
# What launching a Triton kernel from Python costs beyond an aten kernel's launch: on an H100 the
# fused epilogue of level 2 tasks 70 and 76 (2 µs of work) ran 0.70-0.85x of eager, ~10 µs more.
TRITON_LAUNCH_EXTRA_S = 10e-6
# What one call of a torch.compile'd module costs beyond its kernels (Dynamo's guards, the wrapper):
# on an H100, level 1 tasks 27, 49 and 84 (one kernel of 5-8 µs each) ran 0.26-0.30x of eager
# compiled, 12-21 µs more per call (benchmarks/RESULTS.md, builtin optimizer on the H100).
COMPILE_CALL_OVERHEAD_S = 12e-6
# Autotuned matmul and convolution kernels are assumed to gain nothing over cuBLAS and cuDNN: on
# the same H100, level 1 tasks 4, 56, 63 and 78 (one matmul or convolution each) ran 0.50-0.66x of
# eager under max-autotune. Only what torch.compile fuses counts for it.
DEMOTED = 0.4
PROMOTED = 1.5
FAST = 1.05


@dataclass(frozen=True)
class Transformation:
    key: str
    title: str
    family: str
    what: str
    off_cuda: str
    precision: str = "unchanged: the same FP32 arithmetic as Model"


@dataclass
class Assessment:
    transformation: Transformation
    saving_s: float
    why: str
    applicable: bool = True
    adjustments: list[str] = field(default_factory=list)


CUDA_GRAPH = Transformation(
    "cuda-graph",
    "CUDA graph capture with static input buffers",
    "cuda-graph",
    "captures Model's whole forward once as a CUDA graph and replays it: one launch per call "
    "instead of one per kernel. Inputs are copied into the graph's static buffers on each call and "
    "the output is returned as a fresh copy, so no result aliases an earlier one.",
    "On CPU it runs Model's forward unchanged: CUDA graphs exist only on CUDA devices, so a CPU "
    "verdict for this candidate measures the reference itself.",
)
COMPILE = Transformation(
    "torch-compile",
    "torch.compile (default mode)",
    "torch-compile",
    "compiles Model's forward with TorchInductor, which fuses elementwise operations and reductions into generated kernels.",
    "On CPU Inductor generates C++/OpenMP kernels, so the candidate is compiled there too.",
)
COMPILE_AUTOTUNE = Transformation(
    "torch-compile-max-autotune",
    "torch.compile (max-autotune-no-cudagraphs)",
    "torch-compile",
    "compiles Model's forward with TorchInductor in max-autotune mode without CUDA graphs: besides "
    "fusion it benchmarks Triton matmul/convolution templates against cuBLAS/cuDNN for these shapes.",
    "On CPU Inductor generates C++/OpenMP kernels, so the candidate is compiled there too.",
)
COMPILE_GRAPHS = Transformation(
    "torch-compile-reduce-overhead",
    "torch.compile (reduce-overhead, with CUDA graphs)",
    "torch-compile",
    "compiles Model's forward with TorchInductor and replays it through CUDA graphs; each call marks "
    "a new graph step and returns a fresh copy of the output, since the graph reuses its buffers.",
    "On CPU there are no CUDA graphs, so it is the default torch.compile there.",
)
TRITON_EPILOGUE = Transformation(
    "triton-epilogue",
    "fused Triton kernel for the elementwise epilogue",
    "triton",
    "keeps the matmul/convolution in cuBLAS/cuDNN and replaces the chain of elementwise operations "
    "after it, which eager PyTorch runs as one kernel and one full pass over memory each, with a "
    "single Triton kernel generated from the torch.fx graph.",
    "On CPU it runs the same elementwise operations in PyTorch, unfused (the Triton kernel runs on "
    "CUDA, or on CPU only under TRITON_INTERPRET=1), so a CPU verdict checks the rewritten forward "
    "and the epilogue's arithmetic but not the kernel's speed.",
)
CHANNELS_LAST = Transformation(
    "channels-last",
    "channels-last memory layout with cuDNN benchmark mode",
    "layout",
    "stores convolution weights and inputs channels-last (NHWC/NDHWC), the layout cuDNN's tensor-core "
    "kernels read natively, and lets cuDNN time its algorithms for these shapes (benchmark mode, set "
    "for each call and restored after it).",
    "On CPU oneDNN also runs channels-last convolutions, so the candidate changes the layout there too.",
)
TF32 = Transformation(
    "tf32",
    "TF32 tensor cores for FP32 matmuls",
    "precision",
    "lets FP32 matrix multiplications run on TF32 tensor cores (torch.set_float32_matmul_precision"
    "('high') for the duration of each call).",
    "Off CUDA nothing changes: TF32 is a tensor-core format, so a CPU verdict measures the reference.",
    precision="CHANGED to TF32: inputs of each multiplication are rounded to 10 mantissa bits "
    "(FP32 has 23), about 1e-3 relative error; accumulation stays FP32. Expect a tf32-level verdict.",
)
CATALOGUE = [TRITON_EPILOGUE, CUDA_GRAPH, COMPILE_AUTOTUNE, COMPILE_GRAPHS, CHANNELS_LAST, COMPILE, TF32]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs"


def _fusible(profile: ProblemProfile) -> tuple[float, int]:
    ops = [op for op in profile.ops if op.category in FUSIBLE]
    return sum(op.bytes for op in ops) / H100.memory_bandwidth, sum(op.count for op in ops)


def _assess(transformation: Transformation, profile: ProblemProfile, roof: Roofline) -> Assessment:
    launch = H100.launch_overhead_s
    fusible_s, fusible_launches = _fusible(profile)
    compile_saving = COMPILE_FUSED_SHARE * (fusible_s + fusible_launches * launch)
    heavy_s = sum(op_time(op) for op in profile.ops if op.category in (MATMUL, CONVOLUTION))
    key = transformation.key
    overhead = f", less ~{_us(COMPILE_CALL_OVERHEAD_S)} that each compiled call costs"
    if key in ("cuda-graph", "torch-compile-reduce-overhead") and profile.state_carried:
        # A replay runs no Python: the attribute is not set again, and every replay reads the state
        # the capture saw. (KernelBench level 3 tasks 33 and 34 keep an RNN's `self.hidden`; tasks 35,
        # 36 and 38 set `self.c0 = self.h0.to(...)`, the same tensor every call, and keep their CUDA
        # graphs: 3.4-5.3x over eager on the H200, benchmarks/RESULTS.md.)
        names = ", ".join(f"`self.{name}`" for name in profile.state_carried[:3])
        return Assessment(
            transformation,
            0.0,
            f"forward sets {names} anew on every call, state carried from one "
            "call to the next, which a captured CUDA graph would not carry",
            applicable=False,
        )
    if key == "cuda-graph":
        # The replay reads the inputs from static buffers: one more copy of every input per call.
        copy_s = 2 * sum(t.nbytes for t in profile.inputs) / H100.memory_bandwidth
        saving = max(profile.kernel_launches - 1, 0) * launch - copy_s
        return Assessment(
            transformation,
            saving,
            f"removes the launch cost of {profile.kernel_launches} kernels "
            f"(~{launch * 1e6:.0f} µs each), less {_us(copy_s)} to copy the inputs in: ~{_us(saving)}",
        )
    if key == "torch-compile":
        saving = compile_saving - COMPILE_CALL_OVERHEAD_S
        return Assessment(
            transformation,
            saving,
            f"{fusible_launches} fusible kernels moving {_us(fusible_s)} worth "
            f"of memory traffic; if Inductor removes half (~{_us(compile_saving)}){overhead}: ~{_us(saving)}",
        )
    if key == "torch-compile-max-autotune":
        # Autotuning costs minutes of compilation for no assumed gain: ranked just below plain compile.
        saving = compile_saving - COMPILE_CALL_OVERHEAD_S - 1e-9
        return Assessment(
            transformation,
            saving,
            f"fusion as torch.compile (~{_us(compile_saving)}){overhead}; no "
            f"gain assumed on the {_us(heavy_s)} in matmuls/convolutions from autotuned kernels: ~{_us(saving)}",
        )
    if key == "torch-compile-reduce-overhead":
        remaining = max(profile.kernel_launches - COMPILE_FUSED_SHARE * fusible_launches - 1, 0)
        saving = compile_saving + remaining * launch - COMPILE_CALL_OVERHEAD_S
        return Assessment(
            transformation,
            saving,
            f"fusion (~{_us(compile_saving)}) plus the launch cost of the "
            f"~{remaining:.0f} kernels left{overhead}: ~{_us(saving)}",
        )
    if key == "triton-epilogue":
        epilogue = profile.epilogue
        if epilogue is None:
            return Assessment(
                transformation,
                0.0,
                "no fusable chain of elementwise operations after a matmul or convolution was found in the torch.fx graph",
                applicable=False,
            )
        count = 1
        for size in epilogue.anchor_shape:
            count *= size
        passes = len(epilogue.ops) - 1
        saving = passes * (2 * 4 * count / H100.memory_bandwidth + launch) - TRITON_LAUNCH_EXTRA_S
        return Assessment(
            transformation,
            saving,
            f"{len(epilogue.ops)} elementwise ops after `{epilogue.anchor}` "
            f"({' → '.join(epilogue.op_names)}) on {count:,} elements: {passes} fewer memory passes and "
            f"launches, less ~{_us(TRITON_LAUNCH_EXTRA_S)} for launching Triton from Python: ~{_us(saving)}",
        )
    if key == "channels-last":
        convolutions = [op for op in profile.of_category(CONVOLUTION) if set(op.input_ranks) & {4, 5}]
        if not convolutions:
            return Assessment(transformation, 0.0, "no 2D or 3D convolution", applicable=False)
        conv_s = sum(op_time(op) for op in convolutions)
        transpose_s = 2 * sum(t.nbytes for t in profile.inputs) / H100.memory_bandwidth
        saving = CHANNELS_LAST_SHARE * conv_s - transpose_s
        return Assessment(
            transformation,
            saving,
            f"{_us(conv_s)} in convolutions; assuming ~15% from NHWC kernels "
            f"and cuDNN autotuning, less {_us(transpose_s)} to transpose the input: ~{_us(saving)}",
        )
    if key == "tf32":
        matmuls = [op for op in profile.of_category(MATMUL) if "torch.float32" in op.dtypes]
        if not matmuls:
            return Assessment(
                transformation, 0.0, "no FP32 matmul (cuDNN already runs FP32 convolutions as TF32 by default)", applicable=False
            )
        fp32 = sum(op_time(op) for op in matmuls)
        tf32 = sum(op_time(op, tf32=True) for op in matmuls)
        saving = PRECISION_DISCOUNT * (fp32 - tf32)
        return Assessment(
            transformation,
            saving,
            f"FP32 matmuls at {_us(fp32)} on CUDA cores vs {_us(tf32)} on TF32 "
            f"tensor cores; halved because it changes precision: ~{_us(saving)}",
        )
    raise ValueError(f"unknown transformation {key}")


def _assess_blind(transformation: Transformation) -> Assessment:
    """Without an analysis only the transformations that fit any module apply, in a fixed order."""
    order = {"torch-compile-max-autotune": 4, "cuda-graph": 3, "torch-compile-reduce-overhead": 2, "torch-compile": 1}
    if transformation.key not in order:
        return Assessment(transformation, 0.0, "needs the analysis, which failed", applicable=False)
    return Assessment(transformation, order[transformation.key] * 1e-9, "applies to any module; no estimate without the analysis")


@dataclass(frozen=True)
class Lesson:
    round: int
    key: str | None
    text: str
    failed: bool
    best_speedup: float | None
    # How much faster than eager beyond doubt (the lower end of the interval); promotion needs it.
    surely_faster: float | None = None


def lessons(history: list[PriorCandidate]) -> list[Lesson]:
    found = []
    for candidate in sorted(history, key=lambda c: c.round):
        key = transformation_of(candidate.code)
        label = f"`{key}`" if key else "a candidate not from this catalogue"
        if not candidate.verdicts:
            found.append(Lesson(candidate.round, key, f"Round {candidate.round} tried {label}: no verdict yet.", False, None))
            continue
        parts = []
        for verdict in candidate.verdicts:
            if verdict.status == VERIFIED:
                eager = "?" if verdict.speedup_eager is None else f"{verdict.speedup_eager:.2f}x"
                compiled = "?" if verdict.speedup_compile is None else f"{verdict.speedup_compile:.2f}x"
                parts.append(f"verified on {verdict.arch} at {eager} vs eager, {compiled} vs torch.compile")
            else:
                parts.append(f"{verdict.status} on {verdict.arch}" + (f" ({verdict.reason})" if verdict.reason else ""))
        failed = not any(v.status == VERIFIED for v in candidate.verdicts)
        found.append(
            Lesson(
                candidate.round,
                key,
                f"Round {candidate.round} tried {label}: {'; '.join(parts)}.",
                failed,
                candidate.best_speedup,
                candidate.surely_faster,
            )
        )
    return found


def _family(key: str) -> str:
    return next(t.family for t in CATALOGUE if t.key == key)


def _scale(saving: float, factor: float) -> float:
    """A saving made worth more (factor > 1) or less (factor < 1); a loss is scaled the other way, so
    that worth less always ranks lower."""
    return saving * factor if saving >= 0 else saving / factor


def _adjust(assessment: Assessment, learned: list[Lesson]) -> None:
    family = assessment.transformation.family
    for lesson in learned:
        if lesson.key is None or _family(lesson.key) != family or lesson.key == assessment.transformation.key:
            continue
        if lesson.failed:
            assessment.saving_s = _scale(assessment.saving_s, DEMOTED)
            assessment.adjustments.append(f"demoted: `{lesson.key}` of the same family failed in round {lesson.round}")
        elif lesson.best_speedup is not None and lesson.best_speedup < 1.0:
            assessment.saving_s = _scale(assessment.saving_s, DEMOTED)
            assessment.adjustments.append(
                f"demoted: `{lesson.key}` of the same family was slower than eager "
                f"({lesson.best_speedup:.2f}x) in round {lesson.round}"
            )
        elif lesson.best_speedup is not None and lesson.best_speedup >= FAST and (lesson.surely_faster or 0) > 1.01:
            assessment.saving_s = _scale(assessment.saving_s, PROMOTED)
            assessment.adjustments.append(
                f"promoted: `{lesson.key}` of the same family reached {lesson.best_speedup:.2f}x in round {lesson.round}"
            )


@dataclass(frozen=True)
class Plan:
    ranked: list[Assessment]
    tried: set[str]
    learned: list[Lesson]
    roof: Roofline | None

    @property
    def choice(self) -> Assessment | None:
        return next((a for a in self.ranked if a.applicable and a.transformation.key not in self.tried), None)


def plan(profile: ProblemProfile, history: list[PriorCandidate]) -> Plan:
    roof = roofline(profile) if profile.ok else None
    learned = lessons(history)
    tried = {lesson.key for lesson in learned if lesson.key}
    ranked = []
    for transformation in CATALOGUE:
        assessment = _assess(transformation, profile, roof) if roof else _assess_blind(transformation)
        if roof and transformation.family == "torch-compile":
            assessment.saving_s = _scale(assessment.saving_s, COMPILE_BASELINE_DISCOUNT)
            assessment.adjustments.append("counted at 60%: the torch.compile baseline does the same")
        _adjust(assessment, learned)
        ranked.append(assessment)
    ranked.sort(key=lambda a: (not a.applicable, -a.saving_s))
    return Plan(ranked=ranked, tried=tried, learned=learned, roof=roof)


def _compile_body(mode: str) -> Callable[[], str]:
    graphs = mode == "reduce-overhead"
    call = (
        "        torch.compiler.cudagraph_mark_step_begin()\n        return _fresh(compiled(*inputs))"
        if graphs
        else "        return compiled(*inputs)"
    )
    note = ", and replays them through CUDA graphs on CUDA" if graphs else ""
    return lambda: render_body("torch_compile", fresh_output=graphs, mode=mode, mode_note=note, call=call)


_BODIES = {
    "cuda-graph": lambda: render_body("cuda_graph", fresh_output=True),
    "torch-compile": _compile_body("default"),
    "torch-compile-max-autotune": _compile_body("max-autotune-no-cudagraphs"),
    "torch-compile-reduce-overhead": _compile_body("reduce-overhead"),
    "channels-last": lambda: render_body("channels_last"),
    "tf32": lambda: render_body("tf32"),
}


def candidate_code(transformation: Transformation, problem_source: str, profile: ProblemProfile) -> str:
    imports = ["import warnings"] if transformation.key == "cuda-graph" else []
    if transformation.key == "triton-epilogue":
        assert profile.epilogue is not None  # the transformation applies only where the analysis found one
        body, imports = render_epilogue_body(profile.epilogue)
    else:
        body = _BODIES[transformation.key]()
    return render_candidate(
        key=transformation.key, title=transformation.title, problem_source=problem_source, body=body, imports=imports
    )
