"""A row that records the one job message allowed to run it is written once (jobrows): every table
with a job's columns takes them from its abstract base, no module outside jobrows/ sends or claims
a job message of its own, and one reconciler pass covers evaluations, proof checks and runs."""

import ast
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone

from court.models import Evaluation, HackReport, OptimizationRun, ProofCheck
from inference.queues import INFERENCE_QUEUE
from inference.services import start_run
from jobrows import reconciler
from jobrows.models import JobRow, JobRowWithQueue
from tests.conftest import REPO
from tests.court.factories import make_candidate
from tests.verification.conftest import register
from tests.verification.test_fanout import pending
from verification import proofs

# The apps whose rows are job rows, or which send their jobs.
APP_PACKAGES = ("config", "court", "inference", "verification")


def test_every_table_with_a_jobs_columns_takes_them_from_the_job_row():
    with_job_columns = [
        model for model in apps.get_models() if {"message_id", "attempts"} & {field.name for field in model._meta.get_fields()}
    ]

    assert sorted(model.__name__ for model in with_job_columns) == ["Evaluation", "OptimizationRun", "ProofCheck"]
    assert all(issubclass(model, JobRow) for model in with_job_columns)
    assert issubclass(Evaluation, JobRowWithQueue) and issubclass(ProofCheck, JobRowWithQueue)


def test_the_job_rows_app_has_no_table_of_its_own():
    assert list(apps.get_app_config("jobrows").get_models()) == []


def job_plumbing(path: Path) -> list[str]:
    """Where a module makes or sends a job message, records one (or a start) on a row, or
    compares a message with the one a row names: the lines only jobrows.messages should hold."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in ("Message", "enqueue"):
                found.append(f"{path.name}:{node.lineno} calls {called}")
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for each in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(each, ast.Attribute) and each.attr in ("message_id", "enqueued_at", "attempts"):
                        found.append(f"{path.name}:{node.lineno} sets .{each.attr}")
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(operand, ast.Attribute) and operand.attr == "message_id" for operand in operands):
                found.append(f"{path.name}:{node.lineno} compares a .message_id")
    return found


def test_no_module_outside_jobrows_sends_or_claims_a_job_message():
    modules = [path for package in APP_PACKAGES for path in (REPO / package).rglob("*.py") if "migrations" not in path.parts]
    assert len(modules) > 50

    assert [line for path in modules for line in job_plumbing(path)] == []


def test_the_check_for_a_second_copy_finds_the_first():
    found = job_plumbing(REPO / "jobrows" / "messages.py")

    assert {line.split(" ", 1)[1] for line in found} >= {
        "calls Message",
        "calls enqueue",
        "sets .message_id",
        "sets .attempts",
        "compares a .message_id",
    }


def test_the_reconciler_covers_evaluations_proof_checks_and_runs():
    assert reconciler.kinds() == ["evaluations", "proof checks", "runs"]


def lost_long_ago(model, pk: int) -> None:
    """Created and sent before the reconciler's grace, as a row whose message the broker lost."""
    before = timezone.now() - reconciler.grace() - timedelta(minutes=1)
    model.objects.filter(pk=pk).update(created_at=before, enqueued_at=before)


@pytest.mark.django_db(transaction=True)
def test_one_pass_sends_again_a_lost_evaluation_proof_check_and_run(broker):
    register("cpu")
    evaluation = make_candidate().evaluations.get(arch="cpu")
    report = HackReport.objects.create(candidate=evaluation.candidate, category="caching", text="caches", proof_code="x")
    with transaction.atomic():
        [check] = proofs.enqueue_proof_checks(report, ["cpu"])
    broker.declare_queue(INFERENCE_QUEUE)
    run = start_run(problem=evaluation.candidate.problem, backend="builtin")
    for model, pk in ((Evaluation, evaluation.pk), (ProofCheck, check.pk), (OptimizationRun, run.pk)):
        lost_long_ago(model, pk)
    broker.flush_all()  # as a Redis restart without persistence does
    out = StringIO()

    call_command("reconcile", stdout=out)

    assert out.getvalue().splitlines() == [
        f"evaluation {evaluation.pk}: sent again: the broker no longer held its job",
        f"proof check {check.pk}: sent again: the broker no longer held its job",
        f"run {run.pk}: sent again: no loop was running it",
    ]
    assert Evaluation.objects.get(pk=evaluation.pk).message_id != evaluation.message_id
    assert ProofCheck.objects.get(pk=check.pk).message_id != check.message_id
    assert OptimizationRun.objects.get(pk=run.pk).message_id != run.message_id
    assert pending(broker, "gpu.cpu") == 2 and pending(broker, INFERENCE_QUEUE) == 1


@pytest.mark.django_db(transaction=True)
def test_a_pass_with_nothing_lost_says_so(broker):
    out = StringIO()

    call_command("reconcile", stdout=out)

    assert out.getvalue() == "Nothing to reconcile: every pending evaluation, proof check and run has a job.\n"
