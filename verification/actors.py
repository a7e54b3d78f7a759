"""The evaluation job: run the harness on one candidate for one architecture, store the verdict.

Jobs are idempotent: an evaluation that already has a verdict is left alone, so a retried or
redelivered message does nothing twice. A job whose worker process died mid-run is redelivered
by the broker; a job that keeps failing ends as `failed`, with the reason, after its last retry.
"""

import logging
import threading
import time

import dramatiq
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from dramatiq.middleware import CurrentMessage

from evaluation import harness
from kernels.models import Evaluation, ProofCheck
from verification.heartbeats import current_registration
from verification.progress import publish_evaluation
from verification.proofs import record_proof_verdict
from verification.queues import queue_for

logger = logging.getLogger(__name__)

MAX_RETRIES = 3
# A worker killed mid-job (OOM, SIGKILL, host loss) gets the message back from the broker; after
# this many starts the candidate itself is the likely cause, and it is not run again.
MAX_ATTEMPTS = MAX_RETRIES + 2


# One measurement at a time per process: a worker process owns one device, and two candidates
# timed at once on it would disturb each other's numbers.
_device_lock = threading.Lock()


def _claim(evaluation_id: int) -> Evaluation | None:
    """Mark the evaluation running on this worker; None when there is nothing left to do."""
    worker = current_registration()
    with transaction.atomic():
        evaluation = Evaluation.objects.select_for_update().select_related("candidate__problem").get(pk=evaluation_id)
        if not evaluation.is_pending:
            logger.info("evaluation %s already has a verdict (%s); nothing to do", evaluation_id, evaluation.status)
            return None
        if evaluation.arch != worker.device.arch:
            evaluation.status = Evaluation.Status.FAILED
            evaluation.reason = (
                f"Sent to a {worker.device.arch} worker, but it is an evaluation for {evaluation.arch}: "
                f"check the worker's queues."
            )
            evaluation.finished_at = timezone.now()
            evaluation.save()
            return None
        if evaluation.attempts >= MAX_ATTEMPTS:
            evaluation.status = Evaluation.Status.FAILED
            evaluation.reason = (
                f"The worker stopped {evaluation.attempts} times while evaluating this candidate; "
                "it was not run again. Staff can re-verify it."
            )
            evaluation.finished_at = timezone.now()
            evaluation.save()
            return None
        evaluation.status = Evaluation.Status.RUNNING
        evaluation.stage = Evaluation.Stage.BUILDING
        evaluation.attempts += 1
        evaluation.worker = worker.name
        evaluation.started_at = timezone.now()
        evaluation.save(update_fields=["status", "stage", "attempts", "worker", "started_at"])
    return evaluation


def _baselines_for(device: str) -> list[str]:
    return settings.EVALUATION_BASELINES_GPU if device == "cuda" else settings.EVALUATION_BASELINES_CPU


def _on_progress(evaluation: Evaluation):
    def report(stage: str) -> None:
        # "done" goes out with the verdict (evaluate below): published from here it would tell
        # watchers the evaluation is finished while its status still says running.
        if stage == Evaluation.Stage.DONE:
            return
        if stage in Evaluation.Stage.values and stage != evaluation.stage:
            evaluation.stage = stage
            Evaluation.objects.filter(pk=evaluation.pk).update(stage=stage)
            publish_evaluation(evaluation)

    return report


def _retries_so_far() -> int:
    """How many times this job has been retried; outside a worker, as if it were the last try."""
    message = CurrentMessage.get_current_message()
    return message.options.get("retries", 0) if message else MAX_RETRIES


def _fail_after_last_retry(evaluation_id: int, exc: Exception) -> None:
    retries = _retries_so_far()
    if retries < MAX_RETRIES:
        Evaluation.objects.filter(pk=evaluation_id).update(status=Evaluation.Status.QUEUED, stage=Evaluation.Stage.QUEUED)
        return
    evaluation = Evaluation.objects.select_related("candidate").get(pk=evaluation_id)
    evaluation.status = Evaluation.Status.FAILED
    evaluation.stage = Evaluation.Stage.DONE
    evaluation.reason = (
        f"The evaluation failed {retries + 1} times on our side ({type(exc).__name__}: {exc}); staff can re-verify it."
    )
    evaluation.finished_at = timezone.now()
    evaluation.save()
    publish_evaluation(evaluation)


@dramatiq.actor(
    queue_name=queue_for("cpu"),
    max_retries=MAX_RETRIES,
    min_backoff=5_000,
    max_backoff=120_000,
    time_limit=settings.EVALUATION_TIME_LIMIT_MS,
)
def evaluate(evaluation_id: int) -> None:
    evaluation = _claim(evaluation_id)
    if evaluation is None:
        return
    publish_evaluation(evaluation)
    candidate = evaluation.candidate
    device = current_registration().device.torch_device
    try:
        with _device_lock:
            began = time.monotonic()
            verdict = harness.verify(
                candidate.problem.source,
                candidate.code,
                device=device,
                baselines=_baselines_for(device),
                on_progress=_on_progress(evaluation),
                baseline_cache_dir=settings.BASELINE_CACHE_DIR,
                plan=settings.EVALUATION_HARNESS_PLAN,
                limits=settings.EVALUATION_HARNESS_LIMITS,
            )
            evaluation.harness_seconds = round(time.monotonic() - began, 3)
        evaluation.record_verdict(verdict, worker=current_registration().name)
    except Exception as exc:
        logger.exception("evaluation %s of candidate %s on %s failed", evaluation_id, candidate.pk, evaluation.arch)
        _fail_after_last_retry(evaluation_id, exc)
        raise
    publish_evaluation(evaluation)


# A lower number runs first: a worker with both queues' messages at hand takes interactive ones first.
reverify = dramatiq.actor(
    evaluate.fn,
    actor_name="reverify",
    queue_name=queue_for("cpu", priority="bulk"),
    priority=100,
    max_retries=MAX_RETRIES,
    min_backoff=5_000,
    max_backoff=120_000,
    time_limit=settings.EVALUATION_TIME_LIMIT_MS,
)


@dramatiq.actor(
    queue_name=queue_for("cpu"),
    max_retries=MAX_RETRIES,
    min_backoff=5_000,
    max_backoff=120_000,
    time_limit=settings.EVALUATION_TIME_LIMIT_MS,
)
def check_proof(proof_check_id: int) -> None:
    """Run a hack report's proof inputs against its kernel on this worker's architecture."""
    check = ProofCheck.objects.select_related("report__candidate__problem").get(pk=proof_check_id)
    if check.status != ProofCheck.Status.QUEUED:
        return
    candidate = check.report.candidate
    device = current_registration().device.torch_device
    try:
        with _device_lock:
            verdict = harness.verify(
                candidate.problem.source,
                candidate.code,
                device=device,
                baselines=(),
                proof_inputs_source=check.report.proof_code,
                plan=settings.EVALUATION_HARNESS_PLAN,
                limits=settings.EVALUATION_HARNESS_LIMITS,
            )
    except Exception as exc:
        logger.exception("proof check %s of report %s on %s failed", check.pk, check.report_id, check.arch)
        retries = _retries_so_far()
        if retries >= MAX_RETRIES:  # the last try: say so, rather than leave the check queued for ever
            record_proof_verdict(
                check,
                {
                    "status": "failed",
                    "reason": f"The check failed {retries + 1} times on our side ({type(exc).__name__}: {exc}).",
                },
            )
        raise
    record_proof_verdict(check, verdict)
