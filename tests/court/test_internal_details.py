"""Internal details (court.models.internal_details) reach no one but staff: the worker that
verified, its host's platform, its paths, and the raw errors of our failures (a database out of
reach, a model server out of reach), written by the real writers and by the code before them, are
looked for on every route and socket (tests/court/walk.py) as an anonymous visitor and as a
signed-in reporter; staff find them in the admin and on the pages.
"""

import importlib
from dataclasses import dataclass

import psycopg
import pytest
from asgiref.sync import sync_to_async
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core import mail
from django.test import override_settings

from court.models import Candidate, Evaluation, HackReport, OptimizationRun, ProofCheck, RunEvent
from court.models.internal_details import public_verdict, shown_to
from evaluation.harness import HARNESS_VERSION
from inference import actors as run_actors
from tests.court.factories import make_candidate, make_problem
from tests.court.walk import Targets, walk_http, walk_sockets
from tests.inference.model_server import unused_port
from verification import actors as job_actors
from verification import evaluations, heartbeats, jobs
from verification.devices import Device
from verification.models import GpuWorker
from verification.queues import queues_of

pytestmark = pytest.mark.django_db(transaction=True)

# Unique words in what only staff may see (the walk reads real bodies).
WORKER_HOST = "gpu-host-4e7d"
PLATFORM = "Linux-6.1.0-kernel-8c1f-x86_64-with-glibc2.36"
FOLDER = "court-internal-2b9a"  # a folder of the worker's, in the verdict's paths
DATABASE = "pg-internal-7a3c"  # the socket folder of a database out of reach
MODEL_SERVER = "model-internal-5d0e"  # in the model server's URL
SANDBOX = "bwrap-internal-9f2b"  # bubblewrap's own error on the host
TRACEBACK = "Traceback (most recent call last)"
INTERNAL = (WORKER_HOST, PLATFORM, FOLDER, DATABASE, "OperationalError", MODEL_SERVER, SANDBOX, TRACEBACK)
# What stays public: the evidence, and what went wrong in words a person can act on.
GPU, TORCH = "NVIDIA H100 80GB HBM3", "2.13.0+public"
EVALUATION_FAILED = "The evaluation failed 4 times on our side, not because of this kernel"
PUBLIC = (GPU, TORCH, "reference.pt", EVALUATION_FAILED, run_actors.MODEL_UNAVAILABLE)

VERDICT = {
    "harness_version": HARNESS_VERSION,
    "status": "verified",
    "reason": "All checks passed.",
    "checks": [{"name": "outputs_match_reference", "passed": True, "detail": f"compared with /srv/{FOLDER}/cache/reference.pt"}],
    "correctness": {"trials": 3, "inputs_per_trial": 2, "max_abs_error": 1e-7, "max_rel_error": 1e-7},
    "timing": {
        "method": "CUDA events",
        "candidate": {"median_ms": 0.25, "iqr_ms": 0.01, "samples": 100},
        "baselines": {"eager": {"median_ms": 0.5, "iqr_ms": 0.02, "samples": 100}},
        "speedups": {"eager": 2.0},
    },
    "env": {"gpu": GPU, "torch": TORCH, "platform": PLATFORM, "python_executable": f"/srv/{FOLDER}/venv/bin/python"},
    "sandbox": {"confined": False, "detail": f"bubblewrap refused to start a sandbox here: {SANDBOX}: uid map denied"},
    "log_excerpt": f"/srv/{FOLDER}/build/kernel.cu(3): warning: unused variable",
}


ADMIN_MODELS = ("evaluation", "optimizationrun", "proofcheck", "gpuworker")


def database_error() -> psycopg.OperationalError:
    """What psycopg raises for a database out of reach: a socket that is not there."""
    try:
        psycopg.connect(f"host=/var/run/{DATABASE} dbname=kernel_court connect_timeout=1")
    except psycopg.OperationalError as exc:
        return exc
    raise AssertionError("a database answered at a socket that does not exist")


def raw_database_error() -> str:
    """The run's error as the run loop stored it before this change: the exception, as it was."""
    exc = database_error()
    return f"psycopg.{type(exc).__name__}: {exc}"


@dataclass
class World:
    kernel: Candidate  # verified by the worker: its environment, verdict and worker's name are stored
    broken: Candidate  # its evaluation failed on our side: the database was out of reach
    old_run: OptimizationRun  # failed before this change: the raw error was stored where all read it
    run: OptimizationRun  # failed now: the model server was out of reach
    report: HackReport  # the reporter's, whose proof check failed on our side
    worker: GpuWorker
    users: dict

    def targets(self) -> Targets:
        return Targets(
            problems=[self.kernel.problem_id],
            kernels=[self.kernel.pk, self.broken.pk],
            runs=[self.old_run.pk, self.run.pk],
            reports=[self.report.pk],
            users=list(self.users.values()),
            workers=[self.worker.pk],
        )


def fails_like_the_database(*args, **kwargs):
    raise database_error()


def registered_worker():
    return heartbeats.start_registration(
        Device(arch="cpu", name="test cpu", torch_device="cpu", host=WORKER_HOST), queues=queues_of("cpu"), slot="walk"
    )


def run_failed_on_the_model_server(problem, requester) -> OptimizationRun:
    """A run whose model server cannot be reached, run by the run loop itself."""
    run = OptimizationRun.objects.create(problem=problem, requester=requester, backend="vllm", max_rounds=1)
    url = f"http://127.0.0.1:{unused_port()}/{MODEL_SERVER}/v1"
    with override_settings(INFERENCE_VLLM_URL=url, INFERENCE_VLLM_MODEL="served", INFERENCE_CONNECT_RETRIES=0):
        run_actors.run_optimization.fn(run.pk)
    run.refresh_from_db()
    return run


def run_failed_before_this_change(problem, requester) -> OptimizationRun:
    """A run as the run loop left it before this change, its events too; then migrated."""
    raw = raw_database_error()
    run = OptimizationRun.objects.create(problem=problem, requester=requester, status="failed", error=raw)
    RunEvent.objects.create(run=run, seq=1, kind="error", text=raw)
    RunEvent.objects.create(run=run, seq=2, kind="status", text="Failed", data={"status": "failed", "error": raw})
    importlib.import_module("court.migrations.0004_internal_details").move_raw_errors(apps, None)
    run.refresh_from_db()
    return run


def build_world() -> World:
    users = {
        "author": get_user_model().objects.create_user("author"),
        "reporter": get_user_model().objects.create_user("reporter"),
        "staff": get_user_model().objects.create_user("curator", email="curator@example.com", is_staff=True),
    }
    # A curator who may look at jobs and workers in the admin, as their group would allow.
    looks = Permission.objects.filter(codename__in=[f"view_{model}" for model in ADMIN_MODELS])
    users["staff"].user_permissions.add(*looks)
    problem = make_problem(scale=2, origin="kernelbench", level=1, task=1)
    kernel, broken = make_candidate(problem=problem, scale=3), make_candidate(problem=problem, scale=5)
    report = HackReport.objects.create(candidate=kernel, reporter=users["reporter"], category="caching", text="caches")
    check = ProofCheck.objects.create(report=report, arch="cpu")

    registration = registered_worker()  # after the candidates: nothing is sent to it
    try:
        evaluation = Evaluation.objects.create(candidate=kernel, arch="cpu", harness_version=HARNESS_VERSION)
        evaluation = evaluations.claim(evaluation.pk, worker=registration.name, arch="cpu", message_id=None)
        evaluations.record_verdict(evaluation, VERDICT, worker=registration.name, harness_seconds=1.0)

        failing = Evaluation.objects.create(candidate=broken, arch="cpu", harness_version=HARNESS_VERSION)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(jobs.harness, "verify", fails_like_the_database)
            for job, pk in ((job_actors.evaluate, failing.pk), (job_actors.check_proof, check.pk)):
                with pytest.raises(psycopg.OperationalError):
                    job.fn(pk)  # outside a worker's retries: as on the last try
    finally:
        registration.stop()
        heartbeats._current = None

    return World(
        kernel=kernel,
        broken=broken,
        old_run=run_failed_before_this_change(problem, users["author"]),
        run=run_failed_on_the_model_server(problem, users["author"]),
        report=report,
        worker=GpuWorker.objects.get(name=registration.name),
        users=users,
    )


@pytest.fixture
def world() -> World:
    return build_world()


def test_a_failure_of_ours_says_what_to_do_and_keeps_the_raw_error_for_staff(world):
    failed = Evaluation.objects.get(candidate=world.broken)
    assert failed.status == "failed" and failed.reason.startswith(EVALUATION_FAILED)
    assert TRACEBACK in failed.error_detail and DATABASE in failed.error_detail

    assert (world.run.status, world.run.error) == ("failed", run_actors.MODEL_UNAVAILABLE)
    assert MODEL_SERVER in world.run.error_detail
    events = world.run.events
    assert events.get(kind="error").text == run_actors.MODEL_UNAVAILABLE
    assert events.filter(kind="status").last().data["error"] == run_actors.MODEL_UNAVAILABLE

    check = ProofCheck.objects.get(report=world.report)
    assert check.status == "failed" and "on our side" in check.reason and DATABASE not in check.reason
    assert DATABASE in check.verdict["error_detail"] and DATABASE in mail.outbox[-1].body  # staff are told


def test_a_raw_error_stored_before_moves_to_staff_only(world):
    assert world.old_run.error == run_actors.OUR_ERROR and DATABASE in world.old_run.error_detail
    events = world.old_run.events
    assert events.get(kind="error").text == run_actors.OUR_ERROR
    assert events.get(kind="status").data == {"status": "failed", "error": run_actors.OUR_ERROR}


def test_the_migration_moves_each_old_shape_of_raw_error():
    problem = make_problem()
    kernel = make_candidate(problem=problem)
    stopped = "The run's worker stopped 3 times; it was not resumed."
    kept = OptimizationRun.objects.create(problem=problem, status="failed", error=stopped)
    raw = f"OperationalError: socket /var/run/{DATABASE}/x"
    quoted = f"The evaluation failed 4 times on our side ({raw}); staff can re-verify it."
    failed = Evaluation.objects.create(candidate=kernel, arch="cpu", harness_version="9", status="failed", reason=quoted)
    built = f"it does not build: /srv/{FOLDER}/k.cu"
    pathed = Evaluation.objects.create(candidate=kernel, arch="h100", harness_version="9", reason=built)
    report = HackReport.objects.create(candidate=kernel, category="caching", text="caches")
    check = ProofCheck.objects.create(
        report=report, arch="cpu", status="failed", reason=f"The check failed 4 times on our side (OSError: /srv/{FOLDER}/x)."
    )

    importlib.import_module("court.migrations.0004_internal_details").move_raw_errors(apps, None)

    for row in (kept, failed, pathed, check):
        row.refresh_from_db()
    assert (kept.error, kept.error_detail) == (stopped, "")
    assert failed.reason.startswith(EVALUATION_FAILED) and failed.error_detail == raw
    assert pathed.reason == "it does not build: .../k.cu"
    assert FOLDER not in check.reason and FOLDER in check.verdict["error_detail"]


def test_the_public_verdict_keeps_the_evidence_without_the_host():
    shown = public_verdict(VERDICT)
    assert shown["env"] == {"gpu": GPU, "torch": TORCH}
    assert shown["checks"][0]["detail"] == "compared with .../reference.pt"
    assert shown["log_excerpt"] == ".../kernel.cu(3): warning: unused variable"
    assert shown["sandbox"] == {"confined": False}
    assert shown["timing"] == VERDICT["timing"]
    confined = {"confined": True, "detail": "bubblewrap: new user, PID and network namespaces"}
    assert public_verdict({**VERDICT, "sandbox": confined})["sandbox"] == confined


def test_pages_show_staff_the_worker_and_no_one_else(world):
    anonymous = shown_to(None, world.kernel.evaluations.all())
    staff = shown_to(world.users["staff"], world.kernel.evaluations.all())
    assert anonymous[0].internal is None and "platform" not in anonymous[0].shown_env
    assert WORKER_HOST in staff[0].internal["worker"] and staff[0].shown_env["platform"] == PLATFORM


def test_the_api_schema_has_no_worker(client):
    evaluation = client.get("/api/schema/", {"format": "json"}).json()["components"]["schemas"]["Evaluation"]["properties"]
    assert "worker" not in evaluation and {"env", "verdict", "reason"} <= set(evaluation)


@pytest.mark.parametrize("who", ["anonymous", "reporter"])
def test_no_route_shows_an_internal_detail(world, who):
    found = walk_http(world.targets(), world.users.get(who), (*INTERNAL, *PUBLIC))
    assert {marker: found[marker] for marker in INTERNAL} == dict.fromkeys(INTERNAL, set())
    assert {"kernels/%(pk)s/", "api/evaluations/%(pk)s/", "kernels/%(pk)s/bundle.zip"} <= found[GPU]
    assert {"api/leaderboard/%(arch)s/export.jsonl", "api/candidates/%(pk)s/"} <= found[TORCH]
    assert {"kernels/%(pk)s/", "api/evaluations/%(pk)s/", "kernels/%(pk)s/bundle.zip"} <= found["reference.pt"]
    assert {"kernels/%(pk)s/", "api/evaluations/%(pk)s/", "api/candidates/%(pk)s/"} <= found[EVALUATION_FAILED]
    assert {"runs/%(pk)s/", "api/runs/%(pk)s/"} <= found[run_actors.MODEL_UNAVAILABLE]


def test_staff_find_them(world):
    found = walk_http(world.targets(), world.users["staff"], INTERNAL)
    evaluation, run = "admin/kernels/evaluation/%(object_id)s/change/", "admin/kernels/optimizationrun/%(object_id)s/change/"
    assert {evaluation, "admin/evaluation/gpuworker/%(object_id)s/change/", "kernels/%(pk)s/"} <= found[WORKER_HOST]
    assert {evaluation, "kernels/%(pk)s/", "api/evaluations/%(pk)s/"} <= found[PLATFORM]
    assert {evaluation, "api/evaluations/%(pk)s/"} <= found[SANDBOX]
    check = "admin/kernels/proofcheck/%(object_id)s/change/"
    assert {evaluation, run, check, "kernels/%(pk)s/", "runs/%(pk)s/"} <= found[DATABASE]
    assert {run, "runs/%(pk)s/"} <= found[MODEL_SERVER]


@pytest.mark.parametrize("who", ["anonymous", "reporter"])
async def test_no_socket_sends_an_internal_detail(who):
    world = await sync_to_async(build_world)()
    answers = await walk_sockets(world.targets(), world.users.get(who))
    assert {path: [marker for marker in INTERNAL if marker in sent] for path, sent in answers.items()} == dict.fromkeys(
        answers, []
    )
    assert run_actors.MODEL_UNAVAILABLE in answers[f"/ws/runs/{world.run.pk}/"]
    assert run_actors.OUR_ERROR in answers[f"/ws/runs/{world.old_run.pk}/"]
