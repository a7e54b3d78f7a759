"""Tolerances by dtype, widened only by float32's own error and never past the ceiling."""

import pytest

from evaluation.harness import tolerance


def test_float32_tolerance_is_kernelbenchs_and_widens_with_the_references_own_error():
    assert tolerance.tolerance("float32", None) == 1e-2
    assert tolerance.tolerance("float32", 1e-6) == 1e-2
    assert tolerance.tolerance("float32", 0.005) == pytest.approx(0.02)
    assert tolerance.tolerance("float32", 5.0) == tolerance.CEILING


@pytest.mark.parametrize(
    "error, tier", [(0.0, "exact-fp32"), (5e-5, "exact-fp32"), (5e-4, "tf32-level"), (8e-3, "half-level"), (None, None)]
)
def test_precision_tier(error, tier):
    assert tolerance.tier(error) == tier


def test_tiers_are_ordered():
    assert tolerance.tier_rank("exact-fp32") < tolerance.tier_rank("tf32-level") < tolerance.tier_rank("half-level")
