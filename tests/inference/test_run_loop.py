"""The multi-round loop end to end in embedded mode: the builtin optimizer proposes, the CPU worker
measures, and the second round's prompt carries the first round's measured verdict."""

import time

import pytest

from court.models import Evaluation, OptimizationRun, Problem, RunEvent
from court.source import normalized_source_hash
from inference.services import start_run
from tests.inference.kernelbench import problem

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def wait_until_finished(run: OptimizationRun, timeout: float) -> OptimizationRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.is_finished:
            return run
        time.sleep(0.5)
    pytest.fail(f"run {run.pk} still {run.status} after {timeout} s")


def test_two_rounds_where_the_second_prompt_holds_the_first_rounds_measurements(cpu_worker, inference_worker):
    source = problem(1, 19)  # ReLU: small, and both rounds' transformations run on a CPU
    task = Problem.objects.create(title="ReLU", source=source, normalized_hash=normalized_source_hash(source))
    run = wait_until_finished(start_run(problem=task, backend="builtin", max_rounds=2), timeout=600)

    assert (run.status, run.rounds_completed) == (OptimizationRun.Status.DONE, 2), run.error
    first, second = run.candidates.order_by("round")
    assert (first.round, second.round) == (1, 2) and first.code != second.code
    measured = Evaluation.objects.get(candidate=first, arch="cpu")
    assert measured.status == Evaluation.Status.VERIFIED, measured.reason

    prompts = {e.round: e.text for e in run.events.filter(kind=RunEvent.Kind.PROMPT)}
    assert "### Candidate from round" not in prompts[1]
    assert "### Candidate from round 1" in prompts[2]
    assert f"- cpu: verified; {measured.speedup_eager:.2f}x vs eager" in prompts[2]
    verdicts = run.events.filter(kind=RunEvent.Kind.VERDICTS).order_by("seq")
    assert [v.round for v in verdicts] == [1, 2]
    assert not Evaluation.objects.filter(candidate__run=run).exclude(stage="done").exists()
