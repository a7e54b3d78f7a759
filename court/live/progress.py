"""Publishing an evaluation's progress to the pages that watch it, over the Channels layer.

A page watching a run, a kernel or a leaderboard joins that group; every stage change of an
evaluation (queued, building, checking, timing, done) is sent to the groups it belongs to. A
leaderboard hears only of listed kernels' verdicts: its socket is open to anyone.
"""

import logging

from court.live.broadcast import group_send
from court.live.events import candidate_group, evaluation_event, leaderboard_group, run_group
from court.models import Candidate

logger = logging.getLogger(__name__)


def groups_of(evaluation) -> list[str]:
    candidate = evaluation.candidate
    groups = [candidate_group(candidate.pk)]
    if candidate.run_id:
        groups.append(run_group(candidate.run_id))
    if not evaluation.is_pending and Candidate.objects.listed().filter(pk=candidate.pk).exists():
        groups.append(leaderboard_group(evaluation.arch))
    return groups


def publish_evaluation(evaluation) -> None:
    """Send the evaluation's current state; a broken layer is logged, never fails the job."""
    message = {"type": "court.event", "event": evaluation_event(evaluation)}
    for group in groups_of(evaluation):
        try:
            group_send(group, message)
        except Exception:
            logger.exception("could not publish evaluation %s to %s", evaluation.pk, group)
