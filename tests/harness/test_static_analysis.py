"""The static look reads the syntax tree: what code uses counts, words in strings and comments do not."""

import gzip
import json
from collections import Counter

from evaluation.harness.static_analysis import analyze, optimization_kind
from tests.harness.conftest import REPO, candidate


def test_load_inline_makes_a_cuda_candidate():
    facts = analyze(candidate("honest_cpp_relu"))

    assert facts["language"] == "cuda"
    assert facts["facts"]["custom_cuda"]


def test_triton_kernel_is_found_through_its_decorator_and_import():
    facts = analyze(candidate("honest_triton_relu"))

    assert facts["language"] == "triton"
    assert facts["facts"]["triton"]


def test_mentions_in_strings_and_comments_count_for_nothing():
    source = """
import torch
# we could use threading, subprocess, load_inline or torch.backends.cuda.matmul.allow_tf32 = True
NOTE = "import socket; os.environ['SECRET']; torch.cuda.Stream(); .half()"
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x * 2
"""
    facts = analyze(source)

    assert facts["facts"] == {}
    assert facts["language"] == "pytorch" and facts["defines_model_new"]


def test_threads_streams_precision_fallbacks_and_introspection_are_reported_with_lines():
    source = """import threading as th
import gc, os
from torch.cuda import Stream
import torch
torch.backends.cuda.matmul.allow_tf32 = True
def f(x):
    try:
        y = x.half()
    except Exception:
        y = x
    s = Stream()
    th.Thread(target=f).start()
    key = os.environ.get("X")
    return gc.get_objects(), f.__code__
"""
    facts = analyze(source)["facts"]

    assert facts["threads"] == [1, 12]
    assert facts["streams"] == [3, 11]
    assert 5 in facts["precision_changes"] and 8 in facts["precision_changes"]
    assert facts["try_except_fallbacks"] == [7]
    assert 14 in facts["introspection"]
    assert facts["environment"] == [13]
    assert facts["global_state"] == [5]


def test_syntax_error_is_reported_not_raised():
    facts = analyze(candidate("fault_syntax_error"))

    assert facts["parse_error"].startswith("SyntaxError at line 5")


def test_which_stream_raw_launches_go_to_is_a_fact():
    source = '''"""Launched as `k<<<g, b>>>` in the docstring: not a launch."""
legacy = """k<<<blocks, threads>>>(x); k<<<blocks, threads, 0>>>(x); k<<<g, b, 0, 0>>>(x);"""
named = """k<<<g, b, 0, at::cuda::getCurrentCUDAStream()>>>(x); k<<<dim3(g, 1), b, smem, stream>>>(x);"""
'''
    safety = analyze(source)["stream_safety"]

    assert (safety["legacy_default_stream"], safety["named_stream"]) == (3, 2)
    assert analyze("import torch\n")["stream_safety"] is None
    assert "legacy default stream" in analyze(candidate("gpu_legacy_stream_relu"))["stream_safety"]["summary"]


def test_cuda_l1_s_h100_entries_by_kind_of_optimization():
    # Of 227 published "kernels", 18 define no ModelNew (17 are the string "None") and 2 are the problem's code.
    with gzip.open(REPO / "data" / "cuda-l1" / "h100.jsonl.gz", "rt") as handle:
        rows = [row for row in map(json.loads, handle) if row.get("custom_code") is not None]

    kinds = Counter(optimization_kind(row["custom_code"], row["ref_code"]) for row in rows)

    assert kinds == {"rewrite": 90, "cuda": 79, "cuda_graph": 25, "none": 18, "compile": 13, "unchanged": 2}


PROBLEM = """
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super(Model, self).__init__()
    def forward(self, a, b):
        return torch.matmul(a, b)
"""


def test_the_problem_s_own_code_with_a_flag_set_is_flags_only_and_without_it_unchanged():
    own = PROBLEM.replace("class Model(", "class ModelNew(").replace("super(Model,", "super(ModelNew,")
    flagged = "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n" + own
    rewritten = own.replace("torch.matmul(a, b)", "(a @ b).contiguous()")

    assert optimization_kind(own, PROBLEM) == "unchanged"
    assert optimization_kind(flagged, PROBLEM) == "flags"
    assert optimization_kind(rewritten, PROBLEM) == "rewrite"
    assert optimization_kind(candidate("honest_triton_relu")) == "triton"
    assert optimization_kind(candidate("honest_cpp_relu")) == "cuda"
    assert optimization_kind("None") == "none"
