"""The verification jobs: run the harness on one candidate for one architecture, store the verdict.

A job is idempotent and runs only as its Evaluation's own message (verification.evaluations): an
evaluation that already has a verdict, or that another message now owns, is left alone, so a
retried, redelivered or duplicated message does nothing twice. A job whose worker process died
mid-run is redelivered by the broker (or sent again by the reconciler); a job that keeps failing
ends as `failed`, with the reason, after its last retry.
"""

import logging
import time
import traceback

import dramatiq

from jobrows.messages import current_message_id
from verification import evaluations
from verification.heartbeats import current_registration
from verification.jobs import (
    JOB_OPTIONS,
    MAX_RETRIES,
    probe_device,
    progress_hook,
    retries_so_far,
    run_harness,
    store_through_outage,
)
from verification.proofs import check_proof  # noqa: F401  (registered with the broker where actors are found)
from verification.queues import queue_for

logger = logging.getLogger(__name__)


@dramatiq.actor(actor_name=evaluations.INTERACTIVE_ACTOR, queue_name=queue_for("cpu"), **JOB_OPTIONS)
def evaluate(evaluation_id: int) -> None:
    worker = current_registration()
    evaluation = evaluations.claim(evaluation_id, worker=worker.name, arch=worker.device.arch, message_id=current_message_id())
    if evaluation is None:
        return
    try:
        began = time.monotonic()
        on_progress = progress_hook(lambda stage: evaluations.advance(evaluation, stage))
        verdict = run_harness(evaluation.candidate, on_progress=on_progress)
        harness_seconds = round(time.monotonic() - began, 3)
    except Exception:
        logger.exception("evaluation %s of candidate %s on %s failed", evaluation_id, evaluation.candidate_id, evaluation.arch)
        retries = retries_so_far()
        if retries < MAX_RETRIES:
            evaluations.back_to_queue(evaluation_id)
        else:
            evaluations.fail(
                evaluation,
                f"The evaluation failed {retries + 1} times on our side, not because of this kernel; staff can re-verify it.",
                detail=traceback.format_exc(),
            )
        raise
    store_through_outage(
        lambda: evaluations.record_verdict(evaluation, verdict, worker=worker.name, harness_seconds=harness_seconds),
        what=f"store the verdict of evaluation {evaluation_id}",
    )
    probe_device()


# A lower number runs first: a worker with both queues' messages at hand takes interactive ones first.
reverify = dramatiq.actor(
    actor_name=evaluations.BULK_ACTOR,
    queue_name=queue_for("cpu", priority="bulk"),
    priority=100,
    **JOB_OPTIONS,
)(evaluate.fn)
