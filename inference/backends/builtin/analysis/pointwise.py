"""The elementwise operations the builtin optimizer can fuse into one Triton kernel.

Each operation is written twice from one table: as a Triton expression (the fused kernel) and
as a PyTorch expression (the same epilogue unfused, for devices without Triton). `{a}` and `{b}`
are operand names, other fields are the operation's parameters. Plain Python, no torch import:
the candidate's code is rendered from this table outside the analysing process.
"""

from dataclasses import dataclass

# tanh(x) = 2 sigmoid(2x) - 1: Triton's language has no tanh that also runs in its CPU interpreter.
_TANH = "(2.0 * tl.sigmoid(2.0 * {a}) - 1.0)"
_SOFTPLUS = "tl.where({a} * {beta} > {threshold}, {a}, tl.log(1.0 + tl.exp({a} * {beta})) / {beta})"


@dataclass(frozen=True)
class Pointwise:
    arity: int
    triton: str
    torch: str
    params: tuple[str, ...] = ()


POINTWISE = {
    "add": Pointwise(2, "{a} + {b}", "{a} + {b}"),
    "sub": Pointwise(2, "{a} - {b}", "{a} - {b}"),
    "mul": Pointwise(2, "{a} * {b}", "{a} * {b}"),
    "div": Pointwise(2, "{a} / {b}", "{a} / {b}"),
    "maximum": Pointwise(2, "tl.maximum({a}, {b})", "torch.maximum({a}, {b})"),
    "minimum": Pointwise(2, "tl.minimum({a}, {b})", "torch.minimum({a}, {b})"),
    "neg": Pointwise(1, "-{a}", "-{a}"),
    "identity": Pointwise(1, "{a}", "{a}"),
    "relu": Pointwise(1, "tl.maximum({a}, 0.0)", "torch.relu({a})"),
    "sigmoid": Pointwise(1, "tl.sigmoid({a})", "torch.sigmoid({a})"),
    "tanh": Pointwise(1, _TANH, "torch.tanh({a})"),
    "exp": Pointwise(1, "tl.exp({a})", "torch.exp({a})"),
    "log": Pointwise(1, "tl.log({a})", "torch.log({a})"),
    "abs": Pointwise(1, "tl.abs({a})", "torch.abs({a})"),
    "sqrt": Pointwise(1, "tl.sqrt({a})", "torch.sqrt({a})"),
    "square": Pointwise(1, "{a} * {a}", "{a} * {a}"),
    "silu": Pointwise(1, "{a} * tl.sigmoid({a})", "torch.nn.functional.silu({a})"),
    "gelu": Pointwise(1, "0.5 * {a} * (1.0 + tl.erf({a} * 0.7071067811865476))", "torch.nn.functional.gelu({a})"),
    "gelu_tanh": Pointwise(
        1,
        "0.5 * {a} * (1.0 + " + _TANH.format(a="(0.7978845608028654 * ({a} + 0.044715 * {a} * {a} * {a}))") + ")",
        "torch.nn.functional.gelu({a}, approximate='tanh')",
    ),
    "softplus": Pointwise(
        1, _SOFTPLUS, "torch.nn.functional.softplus({a}, beta={beta}, threshold={threshold})", ("beta", "threshold")
    ),
    "mish": Pointwise(
        1,
        "{a} * " + _TANH.format(a=_SOFTPLUS.format(a="{a}", beta="1.0", threshold="20.0")),
        "torch.nn.functional.mish({a})",
    ),
    "leaky_relu": Pointwise(
        1, "tl.where({a} > 0.0, {a}, {a} * {slope})", "torch.nn.functional.leaky_relu({a}, {slope})", ("slope",)
    ),
    "clamp": Pointwise(1, "tl.minimum(tl.maximum({a}, {low}), {high})", "torch.clamp({a}, {low}, {high})", ("low", "high")),
    "clamp_min": Pointwise(1, "tl.maximum({a}, {low})", "torch.clamp_min({a}, {low})", ("low",)),
    "clamp_max": Pointwise(1, "tl.minimum({a}, {high})", "torch.clamp_max({a}, {high})", ("high",)),
    "elu": Pointwise(
        1, "tl.where({a} > 0.0, {a}, {alpha} * (tl.exp({a}) - 1.0))", "torch.nn.functional.elu({a}, {alpha})", ("alpha",)
    ),
    "hardswish": Pointwise(1, "{a} * tl.minimum(tl.maximum({a} + 3.0, 0.0), 6.0) / 6.0", "torch.nn.functional.hardswish({a})"),
    "hardsigmoid": Pointwise(1, "tl.minimum(tl.maximum({a} + 3.0, 0.0), 6.0) / 6.0", "torch.nn.functional.hardsigmoid({a})"),
}
