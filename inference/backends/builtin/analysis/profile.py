"""What the analysis found out about a problem, as typed values that cross the process boundary
as JSON (`ProblemProfile.from_dict` reads what `inference.backends.builtin.analysis.probe` prints)."""

from dataclasses import dataclass, field

MATMUL = "matmul"
CONVOLUTION = "convolution"
POINTWISE = "pointwise"


@dataclass(frozen=True)
class OpStats:
    name: str
    category: str
    count: int
    flops: int
    bytes: int
    dtypes: tuple[str, ...] = ()
    input_ranks: tuple[int, ...] = ()


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: str

    def __str__(self) -> str:
        return f"{self.dtype.removeprefix('torch.')}[{', '.join(map(str, self.shape))}]"

    @property
    def nbytes(self) -> int:
        size = {
            "torch.float64": 8,
            "torch.int64": 8,
            "torch.float16": 2,
            "torch.bfloat16": 2,
            "torch.bool": 1,
            "torch.int8": 1,
            "torch.uint8": 1,
        }.get(self.dtype, 4)
        count = 1
        for dim in self.shape:
            count *= dim
        return count * size


@dataclass(frozen=True)
class Epilogue:
    """A fusable chain of pointwise operations after `anchor` (see inference.backends.builtin.analysis.epilogue)."""

    anchor: str
    anchor_shape: tuple[int, ...]
    sides: list[dict]
    ops: list[dict]
    result: str
    forward_code: str
    globals: tuple[str, ...] = ()

    @property
    def op_names(self) -> list[str]:
        return [op["op"] for op in self.ops]


@dataclass(frozen=True)
class ProblemProfile:
    ok: bool
    error: str = ""
    # The problem's own run did not finish within the analysis's limit: no candidate can be checked
    # against it, and the run ends (inference.actors).
    timed_out: bool = False
    inputs: list[TensorSpec] = field(default_factory=list)
    outputs: list[TensorSpec] = field(default_factory=list)
    non_tensor_inputs: int = 0
    parameter_bytes: int = 0
    ops: list[OpStats] = field(default_factory=list)
    kernel_launches: int = 0
    complete: bool = True
    epilogue: Epilogue | None = None
    notes: list[str] = field(default_factory=list)
    # Module attributes forward sets to a new object on every call: state carried from one call to the next.
    state_carried: list[str] = field(default_factory=list)

    @classmethod
    def failed(cls, error: str) -> "ProblemProfile":
        return cls(ok=False, error=error)

    @classmethod
    def from_dict(cls, data: dict) -> "ProblemProfile":
        if not data.get("ok"):
            return cls.failed(data.get("error", "the analysis reported no result"))
        epilogue = data.get("epilogue")
        return cls(
            ok=True,
            inputs=[TensorSpec(tuple(t["shape"]), t["dtype"]) for t in data.get("inputs", [])],
            outputs=[TensorSpec(tuple(t["shape"]), t["dtype"]) for t in data.get("outputs", [])],
            non_tensor_inputs=data.get("non_tensor_inputs", 0),
            parameter_bytes=data.get("parameter_bytes", 0),
            ops=[
                OpStats(
                    name=op["name"],
                    category=op["category"],
                    count=op["count"],
                    flops=op["flops"],
                    bytes=op["bytes"],
                    dtypes=tuple(op.get("dtypes", ())),
                    input_ranks=tuple(op.get("input_ranks", ())),
                )
                for op in data.get("ops", [])
            ],
            kernel_launches=data.get("kernel_launches", 0),
            complete=data.get("complete", True),
            epilogue=None
            if epilogue is None
            else Epilogue(
                anchor=epilogue["anchor"],
                anchor_shape=tuple(epilogue["anchor_shape"]),
                sides=epilogue["sides"],
                ops=epilogue["ops"],
                result=epilogue["result"],
                forward_code=epilogue["forward_code"],
                globals=tuple(epilogue.get("globals", ())),
            ),
            notes=list(data.get("notes", [])),
            state_carried=list(data.get("state_carried", [])),
        )

    def of_category(self, category: str) -> list[OpStats]:
        return [op for op in self.ops if op.category == category]

    @property
    def has_matmul(self) -> bool:
        return bool(self.of_category(MATMUL))

    @property
    def conv_ranks(self) -> set[int]:
        return {rank for op in self.of_category(CONVOLUTION) for rank in op.input_ranks}

    @property
    def fp32_matmul_flops(self) -> int:
        return sum(op.flops for op in self.of_category(MATMUL) if "torch.float32" in op.dtypes)

    @property
    def total_flops(self) -> int:
        return sum(op.flops for op in self.ops)

    @property
    def unfused_bytes(self) -> int:
        """What eager PyTorch moves to and from memory, one kernel at a time."""
        return sum(op.bytes for op in self.ops)

    @property
    def compulsory_bytes(self) -> int:
        """What any implementation must move: inputs, parameters and outputs, once each."""
        return sum(t.nbytes for t in self.inputs) + self.parameter_bytes + sum(t.nbytes for t in self.outputs)
