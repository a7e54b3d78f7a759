"""In-process pieces of the candidate process: global state, namespace snapshots, output facts,
comparison figures."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from evaluation.harness.sandboxed import comparison, integrity, output_facts


def test_global_state_is_restored_after_a_candidate_changes_it():
    original = integrity.GlobalState.capture()
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        torch.backends.cudnn.allow_tf32 = not torch.backends.cudnn.allow_tf32
        changed = integrity.GlobalState.capture()
        original.apply()

        assert torch.get_num_threads() == threads
        assert set(changed.changes_from(original)) >= {"num_threads", "cudnn.allow_tf32"}
        assert integrity.GlobalState.capture().changes_from(original) == {}
    finally:
        original.apply()


def test_snapshot_finds_a_patched_function_and_a_replaced_code_object():
    def helper():
        return 1

    holder = type("Holder", (), {"helper": staticmethod(helper)})
    snapshot = integrity.NamespaceSnapshot([("torch", torch), ("holder", holder)])
    original = torch.matmul
    try:
        torch.matmul = lambda *args: None
        assert snapshot.changed() == ["torch.matmul"]
    finally:
        torch.matmul = original
    assert snapshot.changed() == []


def test_output_facts_catch_subclasses_aliases_and_broadcasts():
    x = torch.randn(4, 4)

    subclass = output_facts.output_facts(torch.nn.Parameter(x), inputs=[x], earlier_outputs=[], model=None)
    alias = output_facts.output_facts(x[1:], inputs=[x], earlier_outputs=[], model=None)
    broadcast = output_facts.output_facts(torch.zeros(1).expand(4, 4), inputs=[x], earlier_outputs=[], model=None)

    assert subclass["leaves"][0]["is_tensor_subclass"] is True
    assert alias["leaves"][0]["aliases_input"] is True
    assert broadcast["leaves"][0]["distinct_elements"] is False


def test_a_padded_layout_has_distinct_elements_and_an_overlapping_one_does_not():
    padded = torch.empty(4, 8)[:, :5]  # rows padded for alignment, as compiled kernels return them
    overlapping = torch.empty(10).as_strided((4, 4), (2, 1))

    assert output_facts.elements_distinct(padded)
    assert output_facts.elements_distinct(torch.empty(3, 4).t())
    assert not output_facts.elements_distinct(overlapping)
    assert not output_facts.elements_distinct(torch.zeros(4, 1).expand(4, 3))


def test_comparison_counts_nan_as_never_passing():
    reference = torch.tensor([1.0, -1.0, 0.0, 2.0], dtype=torch.float64)

    result = comparison.compare_leaves([torch.tensor([1.0, -1.0, float("nan"), 2.0])], [reference])

    assert result["nonfinite"] == 1
    assert result["max_rel_error"] == float("inf")


def test_comparison_measures_error_against_the_element_plus_the_outputs_scale():
    reference = torch.tensor([1.0, -1.0, 0.0, 2.0], dtype=torch.float64)
    scale = reference.square().mean().sqrt().item()  # the RMS, under twice the median of |r|

    result = comparison.compare_leaves([torch.tensor([1.0, -1.0, 0.0, 2.1])], [reference])

    assert result["max_rel_error"] == pytest.approx(0.1 / (2.0 + scale), rel=1e-5)
    assert result["max_abs_error"] == pytest.approx(0.1, rel=1e-5)
    assert result["leaves"][0]["worst_index"] == [3]


def test_a_relu_output_with_nearly_half_its_elements_zero_keeps_its_scale():
    # A batch norm then a ReLU: just under half the elements exactly zero. Counting the zeros, the median
    # fell among the smallest positive values, and the scale with it: float32 rounding read as a miss.
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(100_000, generator=generator, dtype=torch.float64)
    reference = (x - x.sort().values[49_998]).relu()  # 49,999 zeros
    candidate = (reference + 1e-7 * torch.randn(100_000, generator=generator, dtype=torch.float64)).relu().float()

    result = comparison.compare_leaves([candidate], [reference])

    assert result["max_rel_error"] < 1e-4


def test_comparison_names_the_worst_element_by_its_place_in_the_output():
    reference = torch.arange(24, dtype=torch.float64).reshape(2, 3, 4)
    candidate = reference.clone().float()
    candidate[1, 2, 0] += 5

    result = comparison.compare_leaves([candidate], [reference])

    assert result["leaves"][0]["worst_index"] == [1, 2, 0]


def _settled(known: set[int], expected: int) -> list[int]:
    """busy_threads once it shows `expected` threads (a worker takes a moment to reach its queue)."""
    deadline = time.monotonic() + 5
    while len(busy := integrity.busy_threads(known)) != expected and time.monotonic() < deadline:
        time.sleep(0.01)
    return busy


def test_an_idle_pool_worker_is_not_busy_but_a_working_one_and_a_lookalike_are():
    known = integrity.thread_ids()
    release = threading.Event()
    with ThreadPoolExecutor(1, thread_name_prefix="ThreadPoolExecutor") as pool:
        pool.submit(int).result()
        assert _settled(known, 0) == []

        pool.submit(release.wait)
        working = _settled(known, 1)
        lookalike = threading.Thread(target=release.wait, name="ThreadPoolExecutor-0_0")
        lookalike.start()
        both = _settled(known, 2)
        release.set()
    lookalike.join()

    assert len(working) == 1 and set(working) < set(both)


def test_a_few_huge_elements_do_not_let_the_small_ones_be_zero():
    # exp(3x): the root mean square is dominated by the tail; 79% of the elements zeroed passed
    # under an RMS scale (harness 6). The scale is capped at twice the median of |r|.
    x = torch.randn(4096, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    reference = torch.exp(3 * x)
    lazy = reference.clone().float()
    lazy[reference < reference.quantile(0.79)] = 0.0

    result = comparison.compare_leaves([lazy], [reference])

    assert result["max_rel_error"] > 0.1


def test_half_zero_outputs_are_judged_against_their_nonzero_elements():
    # ReLU after a product: half the reference is exactly zero; a sign flipped by rounding near zero
    # is within tolerance of the nonzero elements' size.
    reference = torch.tensor([0.0, 0.0, 0.0, 1.0, 2.0, 3.0], dtype=torch.float64)
    candidate = torch.tensor([0.0, 1e-4, 0.0, 1.0, 2.0, 3.0])

    assert comparison.compare_leaves([candidate], [reference])["max_rel_error"] < 1e-3


def test_python_numbers_in_an_output_are_compared():
    assert comparison.compare_leaves([1.5], [1.5])["max_rel_error"] == 0.0
    assert comparison.compare_leaves([2.0], [1.5])["max_rel_error"] > 0.1
    assert comparison.compare_leaves([3], [4])["max_rel_error"] == 1.0
    assert comparison.compare_leaves([None], [None])["max_rel_error"] == 0.0
    assert comparison.compare_leaves([True], [1])["max_rel_error"] == 1.0


def test_a_captured_output_of_another_structure_is_a_mismatch():
    from evaluation.harness.sandboxed.frames import Captured

    got = [Captured("tensor", torch.ones(2)), Captured("float", 1.0)]
    result = comparison.compare_outputs("tuple[T,F]", got, "tuple[T,T]", [torch.ones(2, dtype=torch.float64)] * 2)

    assert result["structure_mismatch"] == ["tuple[T,F]", "tuple[T,T]"]
