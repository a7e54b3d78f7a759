"""The builtin optimizer: honest reasoning, real candidates, and learning from verdicts."""

import ast

import pytest

from inference.backends.builtin import BuiltinBackend
from inference.backends.builtin.analysis import analyse_problem
from inference.backends.builtin.candidate_code import transformation_of
from inference.backends.builtin.transformations import plan
from inference.backends.events import AnswerDelta, Finished, ReasoningDelta
from inference.extraction import extract_candidate
from inference.prompts import PriorCandidate, PriorVerdict, render_prompt
from tests.inference.kernelbench import problem

# The builtin optimizer inspects each problem in the sandboxed harness.
pytestmark = pytest.mark.usefixtures("sandboxed_harness")


def defines_model_new(code: str) -> bool:
    return any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in ast.parse(code).body)


def stream(source: str, history: list[PriorCandidate]) -> tuple[str, str, list]:
    events = list(BuiltinBackend().stream(render_prompt(source, history).messages))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    answer = "".join(e.text for e in events if isinstance(e, AnswerDelta))
    return reasoning, answer, events


def verified(code: str, speedup: float) -> PriorCandidate:
    return PriorCandidate(code=code, round=1, verdicts=[PriorVerdict("h100", "verified", speedup, speedup * 0.8)])


def test_it_says_it_is_rule_based_and_states_its_assumptions():
    reasoning, answer, events = stream(problem(2, 1), [])

    assert "a rule-based program, not a language model" in reasoning
    assert "H100 SXM: 67 TFLOP/s FP32" in reasoning and "3.35 TB/s" in reasoning
    assert "Speed-of-light floor on H100" in reasoning and "Arithmetic intensity" in reasoning
    assert "torch.fx finds a fusable epilogue: `conv` → relu → add" in reasoning
    assert "**Why this one:**" in answer
    assert defines_model_new(extract_candidate(answer).code)
    assert isinstance(events[-1], Finished) and events[-1].prompt_tokens is None


def test_the_second_round_proposes_another_transformation_and_cites_the_first():
    source = problem(2, 1)
    first = extract_candidate(stream(source, [])[1]).code

    reasoning, answer, _ = stream(source, [verified(first, 1.3)])
    second = extract_candidate(answer).code

    assert transformation_of(second) != transformation_of(first)
    assert f"Round 1 tried `{transformation_of(first)}`: verified on h100 at 1.30x vs eager" in reasoning


def test_a_failed_family_is_demoted(kernelbench_profiles):
    profile = kernelbench_profiles[(2, 2)][1]
    before = next(a for a in plan(profile, []).ranked if a.transformation.key == "torch-compile")
    code = "# builtin-transformation: torch-compile-max-autotune\n"

    later = plan(profile, [PriorCandidate(code, 1, [PriorVerdict("h100", "error", reason="inductor crashed")])])

    after = next(a for a in later.ranked if a.transformation.key == "torch-compile")
    assert later.choice.transformation.key != "torch-compile-max-autotune"
    assert after.saving_s < before.saving_s
    assert "demoted: `torch-compile-max-autotune` of the same family failed in round 1" in after.adjustments


def test_a_problem_without_model_says_what_is_missing():
    profile = analyse_problem("import torch\n")

    assert not profile.ok and "defines no Model" in profile.error


def test_kernelbench_problems_get_two_different_candidates_that_define_model_new(kernelbench_profiles):
    assert {level for level, _ in kernelbench_profiles} == {1, 2, 3}
    for key, (source, profile) in kernelbench_profiles.items():
        assert profile.ok, (key, profile.error)
        first = plan(profile, []).choice
        first_code = BuiltinBackend.answer(source, profile, plan(profile, []))
        history = [verified(extract_candidate(first_code).code, 1.1)]
        second_code = BuiltinBackend.answer(source, profile, plan(profile, history))
        codes = [extract_candidate(first_code).code, extract_candidate(second_code).code]

        assert all(code is not None and defines_model_new(code) for code in codes), key
        assert transformation_of(codes[0]) == first.transformation.key
        assert transformation_of(codes[1]) != transformation_of(codes[0]), key


def test_a_single_small_kernel_is_not_sent_to_torch_compile():
    # Level 1 task 27's shape of problem: one pointwise kernel of a few µs. On the H100 a compiled
    # call cost 12-21 µs more than that kernel (benchmarks/RESULTS.md), so compiling cannot pay.
    profile = analyse_problem(problem(1, 27))
    assert profile.ok, profile.error
    ranked = plan(profile, []).ranked
    by_key = {a.transformation.key: a for a in ranked}
    for key in ("torch-compile", "torch-compile-max-autotune", "torch-compile-reduce-overhead"):
        assert by_key[key].saving_s < 0, by_key[key].why
        assert "each compiled call costs" in by_key[key].why
    assert by_key["torch-compile-max-autotune"].saving_s < by_key["torch-compile"].saving_s
    assert "copy the inputs in" in by_key["cuda-graph"].why


def test_demoting_a_loss_makes_it_rank_lower():
    profile = analyse_problem(problem(1, 27))
    before = next(a for a in plan(profile, []).ranked if a.transformation.key == "torch-compile")
    slower = verified("# builtin-transformation: torch-compile-max-autotune\n", 0.3)
    after = next(a for a in plan(profile, [slower]).ranked if a.transformation.key == "torch-compile")
    assert before.saving_s < 0 and after.saving_s < before.saving_s


def test_a_forward_that_carries_state_between_calls_gets_no_cuda_graph():
    # KernelBench level 3 task 33: an RNN cell that keeps its hidden state in `self.hidden`.
    profile = analyse_problem(problem(3, 33))

    ranked = {a.transformation.key: a for a in plan(profile, []).ranked}
    assert profile.state_carried == ["hidden"]
    for key in ("cuda-graph", "torch-compile-reduce-overhead"):
        assert not ranked[key].applicable
        assert "forward sets `self.hidden` anew on every call" in ranked[key].why
    assert plan(profile, []).choice.transformation.key not in ("cuda-graph", "torch-compile-reduce-overhead")


def test_a_stateless_forward_keeps_cuda_graphs():
    profile = analyse_problem(problem(2, 12))

    assert profile.state_carried == []
    assert next(a for a in plan(profile, []).ranked if a.transformation.key == "cuda-graph").applicable


def test_a_forward_that_sets_an_attribute_to_the_same_tensor_every_call_keeps_cuda_graphs():
    # KernelBench level 3 task 35: `self.c0 = self.h0.to(x.device)` binds a new object on the first
    # call only; the CUDA graph verified at 5.3x over eager on the H200, plain torch.compile 1.06x.
    profile = analyse_problem(problem(3, 35))

    assert profile.state_carried == []
    assert plan(profile, []).choice.transformation.key == "cuda-graph"
