"""The prompts each round sends, and reading them back."""

import pytest

from inference.prompts import PriorCandidate, PriorVerdict, read_prompt, render_prompt, templates
from inference.prompts.rendering import Template, fill

PROBLEM = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x @ x)

## Test code
def get_inputs():
    return [torch.randn(64, 64)]

def get_init_inputs():
    return []
"""

FAST = PriorCandidate(
    code="# fused\nclass ModelNew(nn.Module):\n    pass\n",
    round=1,
    verdicts=[
        PriorVerdict("h100", "verified", speedup_eager=1.84, speedup_compile=1.12),
        PriorVerdict("a100", "verified", speedup_eager=1.31, speedup_compile=0.97),
    ],
)
FAILED = PriorCandidate(
    code="class ModelNew(nn.Module):\n    cache = {}\n",
    round=2,
    verdicts=[PriorVerdict("h100", "rejected", reason="output aliases\nan earlier output | cached")],
)


def test_the_first_round_gets_the_single_shot_prompt():
    messages, template = render_prompt(PROBLEM, [])

    assert [m["role"] for m in messages] == ["system", "user"]
    assert PROBLEM.strip() in messages[1]["content"]
    assert "load_inline" in messages[1]["content"]
    assert template == "single_shot.v1+system.v1"


def test_the_contrastive_prompt_shows_measured_speedups_and_reasons():
    messages, template = render_prompt(PROBLEM, [FAST, FAILED])
    user = messages[1]["content"]

    assert template.startswith("contrastive.v1")
    assert "- h100: verified; 1.84x vs eager; 1.12x vs torch.compile" in user
    assert "- a100: verified; 1.31x vs eager; 0.97x vs torch.compile" in user
    assert "- h100: rejected; reason: output aliases an earlier output | cached" in user
    assert FAST.code.strip() in user and FAILED.code.strip() in user
    assert "why the fast ones were fast" in user


def test_the_fastest_candidate_is_shown_first():
    user = render_prompt(PROBLEM, [FAILED, FAST])[0][1]["content"]

    assert user.index("round 1") < user.index("round 2")


def test_long_candidate_code_is_trimmed_with_a_marker():
    code = "\n".join(f"line_{i} = {i}" for i in range(300))
    user = render_prompt(PROBLEM, [PriorCandidate(code=code, round=1)])[0][1]["content"]

    assert "line_0 = 0" in user and "line_299 = 299" in user
    assert "line_150 = 150" not in user
    assert "# ... [200 lines omitted] ..." in user
    assert "not evaluated" in user


def test_braces_in_code_pass_through_untouched():
    source = PROBLEM + "\nCUDA = 'void k() { int a[2] = {0, 1}; }'\nD = {problem_source}\n"

    assert source.strip() in render_prompt(source)[0][1]["content"]


def test_an_unknown_placeholder_is_an_error():
    with pytest.raises(KeyError, match="placeholder {history}"):
        fill(Template("x", 1, "see {history}"))


def test_every_template_file_is_versioned():
    assert set(templates()) == {"system", "single_shot", "contrastive"}
    assert all(t.id.endswith(".v1") for t in templates().values())


def test_a_rendered_prompt_reads_back_to_problem_and_verdicts():
    content = read_prompt(render_prompt(PROBLEM, [FAST, FAILED]).messages)

    assert content.problem_source == PROBLEM
    assert [c.round for c in content.history] == [1, 2]
    assert content.history[0].verdicts == FAST.verdicts
    assert content.history[1].verdicts[0].status == "rejected"
    assert content.history[1].code == FAILED.code


def test_a_prompt_not_from_our_templates_gives_its_first_python_block():
    content = read_prompt([{"role": "user", "content": f"Speed this up:\n```python\n{PROBLEM}```"}])

    assert content.problem_source == PROBLEM
    assert content.history == []
