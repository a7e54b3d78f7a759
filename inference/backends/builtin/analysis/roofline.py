"""A roofline model of the H100: the fastest a problem could possibly run, and where eager
PyTorch's time goes. These are the figures the builtin optimizer ranks its transformations by
and states in its reasoning; they are estimates from published peaks, not measurements.
"""

from dataclasses import dataclass

from inference.backends.builtin.analysis.profile import CONVOLUTION, MATMUL, OpStats, ProblemProfile


@dataclass(frozen=True)
class Device:
    name: str
    fp32_flops: float  # CUDA cores, per second
    tf32_flops: float  # tensor cores, dense
    bf16_flops: float  # tensor cores, dense
    memory_bandwidth: float  # bytes per second
    launch_overhead_s: float  # what one eager kernel launch costs the host, back to back

    def describe(self) -> str:
        return (
            f"{self.name}: {self.fp32_flops / 1e12:.0f} TFLOP/s FP32, {self.tf32_flops / 1e12:.0f} TFLOP/s TF32 and "
            f"{self.bf16_flops / 1e12:.0f} TFLOP/s BF16 dense tensor-core peak, "
            f"{self.memory_bandwidth / 1e12:.2f} TB/s HBM3, ~{self.launch_overhead_s * 1e6:.0f} µs per eager kernel launch"
        )


# NVIDIA's H100 SXM5 datasheet peaks; the launch cost is a typical eager PyTorch figure.
H100 = Device(
    name="H100 SXM",
    fp32_flops=67e12,
    tf32_flops=494.7e12,
    bf16_flops=989.4e12,
    memory_bandwidth=3.35e12,
    launch_overhead_s=4e-6,
)


def compute_time(op: OpStats, device: Device = H100, *, tf32: bool = False) -> float:
    if op.category == MATMUL:
        if {"torch.bfloat16", "torch.float16"} & set(op.dtypes):
            return op.flops / device.bf16_flops
        return op.flops / (device.tf32_flops if tf32 else device.fp32_flops)
    if op.category == CONVOLUTION:
        # cuDNN runs FP32 convolutions on TF32 tensor cores unless told not to (PyTorch's default).
        return op.flops / device.tf32_flops
    return op.flops / device.fp32_flops


def op_time(op: OpStats, device: Device = H100, *, tf32: bool = False) -> float:
    """The op's roofline time: bound by its arithmetic or by its memory traffic."""
    return max(compute_time(op, device, tf32=tf32), op.bytes / device.memory_bandwidth)


@dataclass(frozen=True)
class Roofline:
    flops: int
    compulsory_bytes: int
    unfused_bytes: int
    launches: int
    speed_of_light_s: float
    eager_estimate_s: float
    launch_share: float

    @property
    def arithmetic_intensity(self) -> float:
        return self.flops / max(self.compulsory_bytes, 1)


def roofline(profile: ProblemProfile, device: Device = H100) -> Roofline:
    flops = profile.total_flops
    compute_floor = sum(compute_time(op, device) for op in profile.ops)
    memory_floor = profile.compulsory_bytes / device.memory_bandwidth
    launch_time = profile.kernel_launches * device.launch_overhead_s
    eager = sum(op_time(op, device) for op in profile.ops) + launch_time
    return Roofline(
        flops=flops,
        compulsory_bytes=profile.compulsory_bytes,
        unfused_bytes=profile.unfused_bytes,
        launches=profile.kernel_launches,
        speed_of_light_s=max(compute_floor, memory_floor),
        eager_estimate_s=eager,
        launch_share=launch_time / eager if eager else 0.0,
    )
