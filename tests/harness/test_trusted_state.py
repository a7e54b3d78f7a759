"""What later verifications trust is measured with no user code alive, and what a candidate leaves
behind is bound: the device's ceilings, and the build caches."""

import pytest

from evaluation.harness import baseline_cache
from tests.harness.conftest import SMALL_PLAN, failed_check

RATES = {"bandwidth_gb_s": 10.0, "matrix_tflop_s": 0.5, "matrix_dtype": "float32"}


def test_the_device_rates_are_measured_before_any_process_loads_the_problem(verifier, tmp_path):
    verdict = verifier("matmul", "honest_matmul", plan={"speed_of_light": True}, baseline_cache_dir=str(tmp_path))

    assert verdict["status"] == "verified", verdict["reason"]
    requests = list(verdict["cost"]["requests_s"])
    assert requests.index("baseline rates") < requests.index("reference prepare")
    assert "candidate load" not in requests[: requests.index("baseline rates")]
    # Kept, unless the two measurements disagreed (a loaded host), which the verdict's cost says.
    kept = baseline_cache.load_rates(str(tmp_path), baseline_cache.environment_key(verdict["env"], SMALL_PLAN["flush_bytes"]))
    assert kept or verdict["cost"]["rates_not_kept"]


def test_a_later_measurement_never_lowers_a_kept_ceiling(tmp_path):
    key = {"device": "cpu"}
    baseline_cache.store_rates(str(tmp_path), key, RATES)

    baseline_cache.store_rates(str(tmp_path), key, {**RATES, "bandwidth_gb_s": 3.0, "matrix_tflop_s": 0.9})

    assert baseline_cache.load_rates(str(tmp_path), key) == {**RATES, "matrix_tflop_s": 0.9}


def test_two_measurements_that_disagree_are_not_both_believed():
    assert baseline_cache.rates_agree(RATES, {**RATES, "bandwidth_gb_s": 9.5})
    assert not baseline_cache.rates_agree(RATES, {**RATES, "bandwidth_gb_s": 5.3})
    assert baseline_cache.best_rates(RATES, {**RATES, "bandwidth_gb_s": 5.3})["bandwidth_gb_s"] == 10.0


@pytest.mark.parametrize("candidate", ["fault_fills_build_cache", "fault_fills_build_cache_with_entries"])
def test_a_build_that_fills_its_cache_is_stopped_while_it_runs(verifier, tmp_path, candidate):
    # The second fills it with 12,600 empty folders and files: no bytes by their sizes, 49 MiB of entries.
    verdict = verifier(
        "matmul",
        candidate,
        limits={"build_cache_dir": str(tmp_path / "builds"), "build_cache_bytes": 32 * 2**20},
    )

    assert (verdict["status"], failed_check(verdict)) == ("error", "candidate_loads"), verdict["reason"]
    assert "build cache reached" in verdict["reason"]
    assert verdict["cost"]["total_s"] < 25  # stopped at its limit, not after its 30 s of "building"
    assert not [p for p in (tmp_path / "builds" / "candidates").iterdir() if p.is_dir()]  # and its cache removed
