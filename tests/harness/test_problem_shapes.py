"""Size constants come from the problem's syntax tree; other sizes change batch first."""

from evaluation.harness.problem_shapes import size_constants, variants

CONV = """
import torch
batch_size = 128
in_channels = 3
depth, height, width = 16, 32, 32
kernel_size = 3
dropout_p = 0.2
scale = True
def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]
"""


def test_int_constants_including_tuples_are_found_and_floats_and_bools_are_not():
    names = {c.name: c.value for c in size_constants(CONV)}

    assert names == {"batch_size": 128, "in_channels": 3, "depth": 16, "height": 32, "width": 32, "kernel_size": 3}


def test_batch_changes_first_to_an_odd_size():
    assert variants(size_constants(CONV))[0] == {"batch_size": 65}


def test_without_a_batch_every_size_like_constant_changes():
    tried = variants(size_constants("M = 1024\nN = 16\nK = 4\n"))

    assert tried[0] == {"M": 513, "N": 9}
    assert tried[1] == {"M": 513}
