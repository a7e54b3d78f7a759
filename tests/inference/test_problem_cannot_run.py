"""A problem that cannot run ends its run after the first failure that shows it, with that failure's
reason: no later round is generated against a reference that cannot run (issue 33)."""

import pytest
from django.test import override_settings

from court.models import Evaluation, OptimizationRun, Problem, RunEvent
from court.source import normalized_source_hash
from inference.services import start_run
from tests.inference.test_run_loop import wait_until_finished

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# Runs in the builtin optimizer's analysis (whose process has KERNEL_COURT_CPU_SECONDS set), fails in
# the harness's reference process (float64): the first verdict finds the problem failing.
FAILS_IN_THE_HARNESS = '''"""Fails whenever the harness runs it."""
import os

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.dtype == torch.float64 or "KERNEL_COURT_CPU_SECONDS" not in os.environ:
            raise RuntimeError("this reference cannot run")
        return torch.relu(x)


def get_inputs():
    return [torch.randn(256)]


def get_init_inputs():
    return []
'''

# No docstring: the browser test types it into the demo's editor, which closes triple quotes.
HANGS = """import time

import torch
import torch.nn as nn


class Model(nn.Module):
    # Never returns.

    def __init__(self):
        super().__init__()

    def forward(self, x):
        while True:
            time.sleep(1)


def get_inputs():
    return [torch.randn(256)]


def get_init_inputs():
    return []
"""


def _problem(source: str) -> Problem:
    return Problem.objects.create(title="Cannot run", source=source, normalized_hash=normalized_source_hash(source))


def test_a_verdict_that_finds_the_reference_failing_ends_the_run_after_its_round(cpu_worker, inference_worker):
    run = wait_until_finished(start_run(problem=_problem(FAILS_IN_THE_HARNESS), backend="builtin", max_rounds=3), timeout=300)

    assert run.status == OptimizationRun.Status.FAILED, run.error
    assert run.rounds_completed == 1 and run.candidates.count() == 1
    evaluation = Evaluation.objects.get(candidate__run=run)
    assert "the problem's reference failed" in evaluation.reason
    assert run.error == f"The run stopped after round 1: {evaluation.reason}."
    assert run.events.filter(kind=RunEvent.Kind.ERROR, text=run.error).exists()


@override_settings(INFERENCE_BUILTIN_ANALYSIS_TIMEOUT_S=3.0)
def test_a_problem_that_hangs_in_the_analysis_ends_the_run_there(inference_worker):
    run = wait_until_finished(start_run(problem=_problem(HANGS), backend="builtin", max_rounds=2), timeout=120)

    assert run.status == OptimizationRun.Status.FAILED
    assert run.error == (
        "The problem cannot run on its own: the problem did not finish running within the analysis's limit of 3 s, "
        "so no candidate can be checked against it."
    )
    assert run.candidates.count() == 0
