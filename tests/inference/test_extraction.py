"""Finding the candidate's code in a model answer."""

from inference.extraction import Outcome, extract_candidate

MODEL_NEW = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


def fenced(code: str, language: str = "python", fence: str = "```") -> str:
    return f"{fence}{language}\n{code}{fence}\n"


def test_the_last_block_defining_model_new_is_taken():
    later = MODEL_NEW.replace("return x", "return x * 1")
    answer = f"First try:\n{fenced(MODEL_NEW)}\nBetter:\n{fenced(later, 'py')}\nA helper:\n{fenced('x = 1')}"

    extracted = extract_candidate(answer)

    assert extracted.outcome == Outcome.FOUND
    assert extracted.code == later


def test_a_bare_fence_counts_as_python():
    assert extract_candidate(fenced(MODEL_NEW, language="")).code == MODEL_NEW


def test_an_answer_without_code_says_there_is_no_block():
    extracted = extract_candidate("Use shared memory tiling for this one.")

    assert extracted.code is None
    assert extracted.outcome == Outcome.NO_CODE_BLOCK
    assert "no ```python code block" in extracted.message


def test_blocks_without_model_new_are_reported_as_such():
    extracted = extract_candidate(fenced("class Model: pass\n") + fenced("__global__ void k() {}\n", "cuda"))

    assert extracted.outcome == Outcome.NO_MODEL_NEW
    assert "1 Python code block, but none defines class ModelNew" in extracted.message


def test_a_block_cut_off_by_the_token_limit_is_reported():
    extracted = extract_candidate("Here it is:\n```python\n" + MODEL_NEW[:40])

    assert extracted.outcome == Outcome.CUT_OFF
    assert "cut off" in extracted.message


def test_an_earlier_complete_block_wins_over_a_cut_off_one():
    answer = fenced(MODEL_NEW) + "\nAnd faster:\n```python\nclass ModelNew(torch.nn.Mod"

    assert extract_candidate(answer).code == MODEL_NEW


def test_a_block_that_does_not_parse_is_skipped():
    broken = MODEL_NEW.replace("return x", "return x +")
    answer = fenced(MODEL_NEW) + fenced(broken)

    assert extract_candidate(answer).code == MODEL_NEW


def test_only_an_unparsable_model_new_says_where_it_breaks():
    extracted = extract_candidate(fenced(MODEL_NEW.replace("return x", "return x +")))

    assert extracted.outcome == Outcome.UNPARSABLE
    assert "line 5" in extracted.message


def test_backticks_inside_a_string_do_not_close_the_block():
    code = MODEL_NEW + 'FENCE = "```"\nDOC = """\n```python\nnot code\n"""\n'

    assert extract_candidate(fenced(code)).code == code


def test_a_longer_fence_holds_a_shorter_one():
    code = MODEL_NEW + 'DOC = """\n```\n"""\n'

    assert extract_candidate(fenced(code, fence="````")).code == code


def test_code_in_the_reasoning_does_not_count():
    answer = f"<think>Maybe this:\n{fenced(MODEL_NEW)}</think>\nI could not find a faster version."

    assert extract_candidate(answer).outcome == Outcome.NO_CODE_BLOCK


def test_code_after_the_reasoning_counts():
    answer = f"<think>Try fusion.\n{fenced('x = 1')}</think>\n{fenced(MODEL_NEW)}"

    assert extract_candidate(answer).code == MODEL_NEW


def test_an_answer_still_inside_its_reasoning_says_so():
    extracted = extract_candidate(f"<think>Let me write it:\n{fenced(MODEL_NEW)}")

    assert extracted.outcome == Outcome.STILL_REASONING
