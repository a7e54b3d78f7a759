"""The data model's invariants hold in the database itself, not only in forms."""

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from court.models import Candidate, Curation, Evaluation, HackReport, OptimizationRun, Problem
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import make_candidate, make_problem
from verification.evaluations import record_verdict

pytestmark = pytest.mark.django_db


def violates(create):
    with pytest.raises(IntegrityError), transaction.atomic():
        create()


def test_same_normalized_source_is_one_problem():
    problem = make_problem(scale=3)
    violates(lambda: Problem.objects.create(source=problem.source, normalized_hash=problem.normalized_hash))


def test_kernelbench_task_is_unique():
    make_problem(scale=2, origin="kernelbench", level=1, task=1)
    violates(lambda: make_problem(scale=5, origin="kernelbench", level=1, task=1))


def test_kernelbench_problem_needs_level_and_task():
    violates(lambda: make_problem(scale=2, origin="kernelbench"))


def test_user_problems_need_no_level():
    make_problem(scale=2)
    make_problem(scale=3)
    assert Problem.objects.filter(level=None).count() == 2


def test_evaluation_is_unique_per_candidate_arch_and_harness_version():
    candidate = make_candidate()
    Evaluation.objects.create(candidate=candidate, arch="h100", harness_version=HARNESS_VERSION)
    Evaluation.objects.create(candidate=candidate, arch="a100", harness_version=HARNESS_VERSION)
    Evaluation.objects.create(candidate=candidate, arch="h100", harness_version="0-older")
    violates(lambda: Evaluation.objects.create(candidate=candidate, arch="h100", harness_version=HARNESS_VERSION))


def test_speedup_must_be_positive():
    candidate = make_candidate()
    violates(
        lambda: Evaluation.objects.create(candidate=candidate, arch="h100", harness_version=HARNESS_VERSION, speedup_eager=0)
    )


def test_verified_evaluation_must_be_finished():
    candidate = make_candidate()
    violates(
        lambda: Evaluation.objects.create(candidate=candidate, arch="h100", harness_version=HARNESS_VERSION, status="verified")
    )


def copy_of(candidate: Candidate, **fields) -> Candidate:
    """The same code saved again past create_candidate, which would return the existing one."""
    values = {"problem": candidate.problem, "code": candidate.code, "source_hash": candidate.source_hash}
    return Candidate.objects.create(**{"language": candidate.language, "origin": candidate.origin, **values, **fields})


def test_same_code_for_a_problem_outside_runs_is_one_candidate():
    candidate = make_candidate()
    assert make_candidate(problem=candidate.problem) == candidate
    violates(lambda: copy_of(candidate))


def test_runs_may_repeat_code_that_exists_outside_them_but_not_within():
    candidate = make_candidate()
    run = OptimizationRun.objects.create(problem=candidate.problem)
    in_run = make_candidate(problem=candidate.problem, run=run, origin=Candidate.Origin.MODEL, round=1)
    assert in_run != candidate
    violates(lambda: copy_of(in_run, run=run, round=2))


def test_model_candidate_needs_a_run_and_round():
    violates(lambda: make_candidate(origin=Candidate.Origin.MODEL))


def test_run_rounds_are_bounded():
    problem = make_problem()
    violates(lambda: OptimizationRun.objects.create(problem=problem, max_rounds=0))
    violates(lambda: OptimizationRun.objects.create(problem=problem, max_rounds=2, rounds_completed=3))
    violates(lambda: OptimizationRun.objects.create(problem=problem, target_speedup=-1))


def test_duplicate_report_names_its_original_and_only_duplicates_do():
    candidate = make_candidate()
    original = HackReport.objects.create(candidate=candidate, category="caching", text="caches")
    violates(lambda: HackReport.objects.create(candidate=candidate, category="caching", text="x", status="duplicate"))
    violates(lambda: HackReport.objects.create(candidate=candidate, category="caching", text="x", duplicate_of=original))
    HackReport.objects.create(candidate=candidate, category="caching", text="x", status="duplicate", duplicate_of=original)


def test_curation_records_who_and_when():
    staff = get_user_model().objects.create_user("curator", is_staff=True)
    candidate = make_candidate()
    candidate.curate(state=Curation.FEATURED, by=staff)
    candidate.refresh_from_db()
    assert candidate.curation == "featured" and candidate.curated_by == staff and candidate.curated_at


def test_delisting_needs_a_public_reason():
    candidate = make_candidate()
    with pytest.raises(ValueError, match="reason"):
        candidate.curate(state=Curation.DELISTED, by=None)


def test_recording_a_verdict_copies_the_indexed_figures():
    evaluation = Evaluation.objects.create(candidate=make_candidate(), arch="cpu", harness_version=HARNESS_VERSION)
    record_verdict(
        evaluation,
        {
            "status": "verified",
            "reason": "All checks passed.",
            "correctness": {"precision_tier": "exact-fp32", "max_abs_error": 1e-7, "max_rel_error": 2e-7},
            "timing": {
                "candidate": {"median_ms": 0.5, "iqr_ms": 0.01, "samples": 50},
                "speedups": {"eager": 1.5, "compile": 1.1},
            },
            "flags": ["reduced_precision"],
            "env": {"torch": "2.13.0"},
        },
        worker="host:cpu",
    )
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.speedup_eager, evaluation.speedup_compile) == ("verified", 1.5, 1.1)
    assert evaluation.speedup_cudagraph is None
    assert evaluation.flags == ["reduced_precision"] and evaluation.worker == "host:cpu"
    assert evaluation.finished_at is not None


def test_a_verdict_with_an_unknown_status_is_refused():
    evaluation = Evaluation.objects.create(candidate=make_candidate(), arch="cpu", harness_version=HARNESS_VERSION)
    with pytest.raises(ValueError, match="status must be one of"):
        record_verdict(evaluation, {"status": "fast"})
