"""A pasted module is parsed, never run, and each mistake gets a message that says what to fix."""

import pytest

from court.validation import SourceError, validate_candidate, validate_problem

GOOD = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    """Adds one."""
    def forward(self, x):
        return x + 1

def get_inputs():
    return [torch.randn(4)]

def get_init_inputs():
    return []
'''


def errors_for(source: str) -> str:
    with pytest.raises(SourceError) as raised:
        validate_problem(source)
    return str(raised.value)


def test_kernelbench_module_is_accepted_with_its_docstring_as_title():
    problem = validate_problem(GOOD)
    assert problem.title == "Adds one."
    assert len(problem.normalized_hash) == 64


def test_empty_module_is_refused():
    assert "empty" in errors_for("   \n")


def test_syntax_error_names_the_line():
    message = errors_for(GOOD + "\ndef broken(:\n")
    assert "not valid Python" in message and "line 16" in message


def test_missing_model_class_is_named():
    assert "No class `Model`" in errors_for(GOOD.replace("class Model(", "class Other("))


def test_model_that_is_not_a_class_is_refused():
    source = GOOD.replace("class Model(nn.Module):", "Model = nn.Identity\nclass Unused(nn.Module):")
    assert "`Model` must be a class" in errors_for(source)


def test_model_without_forward_is_refused():
    assert "defines no `forward`" in errors_for(GOOD.replace("def forward(self, x)", "def compute(self, x)"))


def test_missing_get_inputs_is_named():
    assert "No function `get_inputs()`" in errors_for(GOOD.replace("def get_inputs():", "def make_inputs():"))


def test_missing_get_init_inputs_is_named():
    assert "`get_init_inputs()`" in errors_for(GOOD.replace("def get_init_inputs():", "def init():"))


def test_get_inputs_with_required_arguments_is_refused():
    assert "callable without arguments" in errors_for(GOOD.replace("def get_inputs():", "def get_inputs(n):"))


def test_async_get_inputs_is_refused():
    assert "not `async def`" in errors_for(GOOD.replace("def get_inputs():", "async def get_inputs():"))


def test_oversized_module_is_refused_with_the_limit(settings):
    settings.PROBLEM_SOURCE_MAX_BYTES = 1024
    message = errors_for(GOOD + "#" * 2000)
    assert "the limit is 1,024" in message


def test_nul_character_is_refused():
    assert "NUL" in errors_for(GOOD + "\x00")


def test_every_problem_is_listed_at_once():
    message = errors_for("import torch\n")
    assert "`Model`" in message and "`get_inputs()`" in message and "`get_init_inputs()`" in message


def test_nothing_is_executed_while_validating(tmp_path):
    marker = tmp_path / "ran"
    validate_problem(GOOD + f"\nopen({str(marker)!r}, 'w').write('x')\n")
    assert not marker.exists()


def test_same_module_with_other_comments_and_layout_has_the_same_hash():
    reformatted = "# a comment\n" + GOOD.replace("return x + 1", "return (x +  1)  # plus one")
    assert validate_problem(reformatted).normalized_hash == validate_problem(GOOD).normalized_hash


def test_candidate_must_define_model_new():
    with pytest.raises(SourceError, match="No class `ModelNew`"):
        validate_candidate(GOOD)


def test_candidate_language_is_read_from_the_syntax_tree():
    pytorch = (
        "import torch\nclass ModelNew(torch.nn.Module):\n"
        "    def forward(self, x):\n        return x  # load_inline, import triton\n"
    )
    cuda = "from torch.utils.cpp_extension import load_inline\nm = load_inline(name='m', cpp_sources='')\n" + pytorch
    triton = "import triton\nimport triton.language as tl\n" + pytorch
    assert validate_candidate(pytorch).language == "pytorch"
    assert validate_candidate(cuda).language == "cuda"
    assert validate_candidate(triton).language == "triton"
