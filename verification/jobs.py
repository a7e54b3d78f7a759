"""What every verification job shares: its retry policy, and running the harness on this worker's device.

A verification and a hack report's proof check are the same call of the harness on this worker's
device, one measurement at a time; they differ in the baselines timed and the proof's inputs.
"""

import logging
import threading
import time
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections
from dramatiq.middleware import CurrentMessage

from court.models import Candidate, Problem
from evaluation import harness
from evaluation.harness import baseline_cache
from evaluation.harness import verdict as harness_verdict
from verification.heartbeats import current_registration

# The broker runs a job that raised again this many times, backing off between tries.
MAX_RETRIES = 3
JOB_OPTIONS = {
    "max_retries": MAX_RETRIES,
    "min_backoff": 5_000,
    "max_backoff": 120_000,
    "time_limit": settings.EVALUATION_TIME_LIMIT_MS,
}

logger = logging.getLogger(__name__)

# How long a finished job keeps trying to store its verdict while the database is away: a verdict
# costs minutes of a GPU, and a job that raised would measure it all again.
STORE_THROUGH_OUTAGE_S = 180

# One measurement at a time per process: a worker process owns one device, and two candidates
# timed at once on it would disturb each other's numbers.
_device_lock = threading.Lock()


def retries_so_far() -> int:
    """How many times this job has been retried; outside a worker, as if it were the last try."""
    message = CurrentMessage.get_current_message()
    return message.options.get("retries", 0) if message else MAX_RETRIES


def run_harness(candidate: Candidate, *, proof_inputs_source: str | None = None, on_progress=None) -> harness_verdict.Verdict:
    """The harness's verdict on `candidate` on this worker's device: against the configured
    baselines, or, for a proof check, on the proof's inputs with no baseline timed."""
    device = current_registration().device.torch_device
    arguments: dict[str, Any]
    if proof_inputs_source is not None:
        arguments = {"baselines": (), "proof_inputs_source": proof_inputs_source}
    else:
        baselines = settings.EVALUATION_BASELINES_GPU if device == "cuda" else settings.EVALUATION_BASELINES_CPU
        arguments = {
            "baselines": baselines,
            "on_progress": on_progress,
            "baseline_cache_dir": settings.BASELINE_CACHE_DIR,
        }
    with _device_lock:
        return harness.verify(
            candidate.problem.source,
            candidate.code,
            device=device,
            plan=settings.EVALUATION_HARNESS_PLAN,
            limits=settings.EVALUATION_HARNESS_LIMITS,
            **arguments,
        )


# Evaluations since this process last probed its device (`probe_device`).
_since_probe = 0


def probe_device() -> harness_verdict.Verdict | None:
    """After an evaluation: probe this worker's device (`harness.probe`) where it is due, every
    DEVICE_PROBE_EVERY evaluations and after each while the device lacks the controls its stated
    intervals need or last read off 1.0. The probe runs no user code, so no user chooses which
    controls the device keeps. Its failure is logged, never the evaluation's."""
    global _since_probe
    every = settings.DEVICE_PROBE_EVERY
    if not every:
        return None
    device = current_registration().device.torch_device
    _since_probe += 1
    due = baseline_cache.probes_due(settings.BASELINE_CACHE_DIR, device, harness.HARNESS_VERSION)
    if _since_probe < every and not due:
        return None
    if "short" in due:
        # A short call's spread between processes is measured on short calls (measurement.SHORT_CALL_MS).
        path = baseline_cache.short_probe(settings.BASELINE_CACHE_DIR, device, harness.HARNESS_VERSION)
        label, source = path.stem, path.read_text()
    else:
        problem = Problem.objects.filter(origin=Problem.Origin.KERNELBENCH, level=1, degenerate=False).order_by("?").first()
        if problem is None:
            return None
        label, source = problem.label, problem.source
    _since_probe = 0
    try:
        with _device_lock:
            verdict = harness.probe(
                source,
                device=device,
                baseline_cache_dir=settings.BASELINE_CACHE_DIR,
                plan=settings.EVALUATION_HARNESS_PLAN,
                limits=settings.EVALUATION_HARNESS_LIMITS,
            )
    except Exception:
        logger.exception("the probe of this worker's device on %s failed", label)
        return None
    logger.info("probed this worker's device on %s: %s", label, verdict["status"])
    return verdict


def store_through_outage(write, *, what: str, within_s: float | None = None):
    """Run `write` (database writes of a finished job) until it succeeds, reconnecting while the
    database is away, for at most `within_s`; then raise, and the broker retries the job."""
    deadline = time.monotonic() + (STORE_THROUGH_OUTAGE_S if within_s is None else within_s)
    delay = 0.5
    while True:
        try:
            close_old_connections()  # a connection a restart broke is dropped, and the next query reconnects
            return write()
        except (OperationalError, InterfaceError) as error:
            if time.monotonic() + delay > deadline:
                raise
            logger.error("could not %s, the database is unreachable (%s); trying again in %.1f s", what, error, delay)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def progress_hook(advance):
    """The harness's progress callback for a job: a stage is only shown, so a database that is away
    loses that stage, not the verification."""

    def hook(stage: str) -> None:
        try:
            close_old_connections()
            advance(stage)
        except (OperationalError, InterfaceError) as error:
            logger.error("could not record stage %s, the database is unreachable (%s)", stage, error)

    return hook
