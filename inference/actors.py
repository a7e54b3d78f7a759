"""The run loop: rounds of generate, extract, verify, learn, as a Dramatiq job on the inference queue.

Round 1 sends the single-shot prompt; each later round sends the contrastive prompt built from
the earlier candidates and their measured verdicts. Every event is published as it arrives and
stored in the transcript's next batch; each status change stores the transcript up to it first.
The loop stops at the round limit, when a kernel reaches the target speedup, when the requester
cancels, or when the model fails.

A round's candidates are decided once, recorded before the round waits for their verdicts: a loop
that resumes the round (the one before it killed, or its database away) waits for those and asks
the backend nothing, since a backend asked again writes different code (the builtin optimizer
and any sampled model do).
"""

import logging
import time
import traceback
from typing import cast

import dramatiq
from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

# The model client's modules load with the run loop, when the worker process starts, rather than
# in its first run: importing them (compiled from source where bytecode is not written, as in
# the image) held a new worker's interpreter for ~0.5 s, stalling every run it had started
# (benchmarks/RESULTS.md, streaming latency).
import inference.backends.vllm  # noqa: F401
from court.models import Candidate, Evaluation, OptimizationRun, RunEvent
from court.services import create_candidate
from court.validation import SourceError
from inference.backends import get_backend
from inference.backends.events import AnswerDelta, Error, Finished, ReasoningDelta
from inference.cancellation import cancel_requests
from inference.extraction import extract_candidate
from inference.prompts import PriorCandidate, PriorVerdict, render_prompt
from inference.queues import INFERENCE_QUEUE
from inference.runs import RUN_ACTOR, Superseded, claim, heartbeats
from inference.transcript import Transcript
from jobrows.messages import current_message_id, still_names
from verification.models import GpuWorker

logger = logging.getLogger(__name__)

# How often the loop looks at the database for new verdicts, or for a cancel while it waits.
POLL_SECONDS = 0.5


class Cancelled(Exception):
    pass


class ProblemCannotRun(Exception):
    """The problem itself cannot run (it hung in the analysis, or a verdict found its reference or
    baselines failing): no later round can do better, so the run ends with this public reason."""


class ModelFailed(Exception):
    """The backend could not finish its answer. Its message is for staff (it names the model
    server and its settings); the run says only what the requester can do."""

    def __init__(self, message: str, *, retryable: bool):
        super().__init__(message)
        self.retryable = retryable


# What a failed run tells everyone who can see it (court.models.internal_details); the raw error
# is kept for staff in `error_detail`.
MODEL_UNAVAILABLE = "The model could not finish its answer (its server failed or was out of reach); try again in a few minutes."
MODEL_REFUSED = "The model could not take this run's request; staff can see why. Try another backend meanwhile."
# A candidate made while no verification worker runs, for any architecture.
NO_WORKER = (
    "No verification worker is running for any architecture, so nothing verifies this candidate now; it is "
    "verified when one starts (staff: start `manage.py verification_worker`, as the README's services say)."
)
OUR_ERROR = "The run stopped on an error of ours, not of the problem's; staff can see what happened. Start it again."


def public_error(exc: Exception) -> str:
    if isinstance(exc, ModelFailed):
        return MODEL_UNAVAILABLE if exc.retryable else MODEL_REFUSED
    return OUR_ERROR


def _cancel_requested(run: OptimizationRun) -> bool:
    return OptimizationRun.objects.filter(pk=run.pk, cancel_requested_at__isnull=False).exists()


def _set_status(
    run: OptimizationRun, transcript: Transcript, status: str, *, error: str = "", error_detail: str = "", round: int = 0
) -> None:
    run.status = status
    run.error, run.error_detail = error, error_detail
    fields = ["status", "error", "error_detail", "started_at"]
    if status in OptimizationRun.FINISHED:
        run.finished_at = timezone.now()
        fields.append("finished_at")
    transcript.status(round=round, save_run=lambda: run.save(update_fields=fields))


def _generate(run, transcript, round_number, messages) -> str:
    """Stream one model answer into the transcript; returns the answer text."""
    backend = get_backend(run.backend, model=run.model_name or None)

    def cancelled() -> bool:
        if heartbeats.superseded(run.pk):
            raise Superseded
        return cancel_requests.requested(run.pk)

    answer = []
    try:
        with cancel_requests.watching(run.pk):
            for event in backend.stream(messages, cancel=cancelled):
                if isinstance(event, ReasoningDelta):
                    transcript.append_delta(RunEvent.Kind.REASONING, event.text, round=round_number)
                elif isinstance(event, AnswerDelta):
                    answer.append(event.text)
                    transcript.append_delta(RunEvent.Kind.ANSWER, event.text, round=round_number)
                elif isinstance(event, Finished):
                    transcript.append(RunEvent.Kind.FINISHED, data=event.as_dict(), round=round_number)
                elif isinstance(event, Error):
                    if cancelled():
                        raise Cancelled
                    if event.problem:
                        raise ProblemCannotRun(event.message)
                    raise ModelFailed(event.message, retryable=event.retryable)
                if cancelled():
                    raise Cancelled
    finally:
        transcript.flush()  # held deltas are sent whatever ended the stream
    return "".join(answer)


def _await_verdicts(run, candidate: Candidate) -> list[Evaluation]:
    """Wait until every evaluation of the candidate has a verdict, or the verdict time limit."""
    deadline = time.monotonic() + settings.INFERENCE_VERDICT_WAIT_S
    while True:
        evaluations = list(candidate.evaluations.all())
        if evaluations and not any(e.is_pending for e in evaluations):
            return evaluations
        if not evaluations and not GpuWorker.objects.live_architectures():
            return evaluations  # nothing will verify it: the round says so (NO_WORKER)
        if heartbeats.superseded(run.pk):
            raise Superseded
        if time.monotonic() > deadline or _cancel_requested(run):
            return evaluations
        time.sleep(POLL_SECONDS)


def _problem_failure(evaluations: list[Evaluation]) -> str | None:
    """The reason of a verdict that found the problem itself failing (the harness's check
    `problem_runs`), if any."""
    for evaluation in evaluations:
        checks = (evaluation.verdict or {}).get("checks") or []
        if any(check.get("name") == "problem_runs" and not check.get("passed") for check in checks):
            return evaluation.reason
    return None


def _prior(candidate: Candidate, evaluations: list[Evaluation]) -> PriorCandidate:
    return PriorCandidate(
        code=candidate.code,
        round=cast(int, candidate.round),  # a run's candidates always have their round
        verdicts=[
            PriorVerdict(
                arch=e.arch,
                status=e.status,
                speedup_eager=e.speedup_eager,
                speedup_compile=e.speedup_compile,
                reason=e.reason,
                speedup_eager_low=_low_end(e.speedup_interval("eager")),
            )
            for e in evaluations
        ],
    )


def _low_end(interval: list[float] | None) -> float | None:
    return interval[0] if interval else None


def _history(run: OptimizationRun) -> list[PriorCandidate]:
    """What earlier rounds produced, with their verdicts: the contrastive prompt's material."""
    return [
        _prior(candidate, list(candidate.evaluations.all()))
        for candidate in run.candidates.order_by("round", "pk").prefetch_related("evaluations")
    ]


def _best_speedup(run: OptimizationRun) -> float | None:
    speedups = Evaluation.objects.filter(
        candidate__run=run, status=Evaluation.Status.VERIFIED, speedup_eager__isnull=False
    ).values_list("speedup_eager", flat=True)
    return max((speedup for speedup in speedups if speedup is not None), default=None)


def _save_candidate(run, transcript, round_number, code) -> list[Candidate]:
    """The round's candidate, made from `code` and announced; or, where the round has candidates
    already (another loop decided them first), those. A round's candidates are decided once: the
    run's row is locked while they are, and a loop whose run names another job by then stops."""
    with transaction.atomic():
        if not still_names(run):
            raise Superseded
        decided = list(run.candidates.filter(round=round_number).order_by("pk"))
        if decided:
            logger.warning("run %s: round %s has its candidates already; this answer is not used", run.pk, round_number)
            return decided
        try:
            candidate, created = create_candidate(
                problem=run.problem,
                code=code,
                origin=Candidate.Origin.MODEL,
                run=run,
                round=round_number,
                submitted_by=run.requester,
                origin_label=run.backend,
            )
        except SourceError as error:
            transcript.append(RunEvent.Kind.NO_CANDIDATE, text=f"The candidate is not evaluated: {error}", round=round_number)
            return []
    if not created:
        transcript.append(
            RunEvent.Kind.NO_CANDIDATE,
            text=f"The model repeated the candidate of round {candidate.round}; it is not evaluated again.",
            round=round_number,
        )
        return []
    _announce(transcript, candidate)
    return [candidate]


def _announce(transcript: Transcript, candidate: Candidate) -> None:
    transcript.append(
        RunEvent.Kind.CANDIDATE,
        text=candidate.code,
        data={"candidate": candidate.pk, "language": candidate.language, "url": candidate.get_absolute_url()},
        round=cast(int, candidate.round),
    )


def _stored(run: OptimizationRun, kind: str, candidate: Candidate) -> bool:
    return run.events.filter(kind=kind, data__candidate=candidate.pk).exists()


def _decided(run, transcript, round_number) -> list[Candidate]:
    """The candidates a loop that stopped (killed, its database away) made in this round: they are
    the round's, whatever the backend would write if asked again. Each is announced where its
    announcement was not stored."""
    decided = list(run.candidates.filter(round=round_number).order_by("pk"))
    for candidate in decided:
        if not _stored(run, RunEvent.Kind.CANDIDATE, candidate):
            _announce(transcript, candidate)
    return decided


def _round(run, transcript, round_number) -> None:
    candidates = _decided(run, transcript, round_number)
    if not candidates:
        messages, template = render_prompt(run.problem.source, _history(run))
        if not run.prompt_template:
            run.prompt_template = template
            run.save(update_fields=["prompt_template"])
        transcript.append(RunEvent.Kind.PROMPT, text=messages[-1]["content"], data={"template": template}, round=round_number)
        answer = _generate(run, transcript, round_number, messages)
        extracted = extract_candidate(answer)
        if extracted.code is None:
            transcript.append(RunEvent.Kind.NO_CANDIDATE, text=extracted.message, round=round_number)
        else:
            candidates = _save_candidate(run, transcript, round_number, extracted.code)
    failure = None
    for candidate in candidates:
        if _stored(run, RunEvent.Kind.VERDICTS, candidate):
            continue
        _set_status(run, transcript, OptimizationRun.Status.WAITING, round=round_number)
        evaluations = _await_verdicts(run, candidate)
        if _cancel_requested(run):
            raise Cancelled  # its verdicts are still coming: the candidate's page shows them
        if not evaluations:
            transcript.append(RunEvent.Kind.ERROR, text=NO_WORKER, round=round_number)
        transcript.append(
            RunEvent.Kind.VERDICTS,
            data={"candidate": candidate.pk, "verdicts": [_prior(candidate, evaluations).as_dict()]},
            round=round_number,
        )
        failure = failure or _problem_failure(evaluations)
    run.rounds_completed = round_number
    run.save(update_fields=["rounds_completed"])
    if failure:
        raise ProblemCannotRun(f"The run stopped after round {round_number}: {failure}.")


@dramatiq.actor(actor_name=RUN_ACTOR, queue_name=INFERENCE_QUEUE, max_retries=0, time_limit=settings.INFERENCE_RUN_TIME_LIMIT_MS)
def run_optimization(run_id: int) -> None:
    message_id = current_message_id()
    run = claim(run_id, message_id=message_id)
    if run is None:
        return
    with heartbeats.beating(run, message_id):
        _loop(run)


def _loop(run: OptimizationRun) -> None:
    transcript = Transcript(run)
    run.started_at = run.started_at or timezone.now()  # saved with the first status
    try:
        rounds = range(run.rounds_completed + 1, run.max_rounds + 1)
        for round_number in rounds:
            # Before the first round the run was just read, and its cancel request with it.
            if run.cancel_requested_at is not None if round_number == rounds[0] else _cancel_requested(run):
                raise Cancelled
            _set_status(run, transcript, OptimizationRun.Status.RUNNING, round=round_number)
            _round(run, transcript, round_number)
            if run.target_speedup is not None and (_best_speedup(run) or 0) >= run.target_speedup:
                break
        _set_status(run, transcript, OptimizationRun.Status.DONE, round=run.rounds_completed)
    except Cancelled:
        _set_status(run, transcript, OptimizationRun.Status.CANCELLED, round=run.rounds_completed)
    except ProblemCannotRun as exc:
        transcript.append(RunEvent.Kind.ERROR, text=str(exc), round=run.rounds_completed)
        _set_status(run, transcript, OptimizationRun.Status.FAILED, error=str(exc), round=run.rounds_completed)
    except Superseded:
        logger.warning("run %s: another loop took it over; this one stops", run.pk)
    except DatabaseError:
        # Nothing can be recorded while the database is away; the run stays unfinished, its
        # heartbeat stops, and the reconciler resumes it from its last completed round.
        logger.exception("run %s stopped: the database failed; it will be resumed", run.pk)
    except Exception as exc:
        logger.exception("run %s failed", run.pk)
        error = public_error(exc)
        transcript.append(RunEvent.Kind.ERROR, text=error, round=run.rounds_completed)
        _set_status(
            run,
            transcript,
            OptimizationRun.Status.FAILED,
            error=error,
            error_detail=traceback.format_exc(),
            round=run.rounds_completed,
        )
