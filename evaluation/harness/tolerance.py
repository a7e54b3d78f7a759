"""The tolerance a candidate's output is held to, and the precision tier it reached.

Errors are per element, relative to the element's size plus the output's scale (comparison.py).
The base tolerance is KernelBench's 1e-2 for float32 and half outputs (2e-2 for bfloat16): kernels
that compute in TF32 or half precision pass and are flagged `reduced_precision`. Where float32
itself is far from float64 on a problem (long recurrences), the tolerance grows to four times the
float32 reference's own error, but never past a ceiling: no output passes with 10% error.
"""

BASE_TOLERANCE = {"float32": 1e-2, "float16": 1e-2, "bfloat16": 2e-2, "float64": 1e-6}
CEILING = 0.1

# The loosest error each tier allows; a tier says how the output compares with float64.
TIERS = (("exact-fp32", 1e-4), ("tf32-level", 2e-3), ("half-level", 2e-2))


def tolerance(dtype: str, float32_rel_error: float | None) -> float:
    base = BASE_TOLERANCE.get(dtype, 1e-2)
    if float32_rel_error:
        base = max(base, min(4 * float32_rel_error, CEILING))
    return base


def tier(max_rel_error: float | None) -> str | None:
    if max_rel_error is None:
        return None
    for name, bound in TIERS:
        if max_rel_error <= bound:
            return name
    return TIERS[-1][0]


def tier_rank(name: str | None) -> int:
    names = [n for n, _ in TIERS]
    return names.index(name) if name in names else len(names)
