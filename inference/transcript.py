"""Writing a run's transcript: store each event, then publish it to the run's group.

Storing before publishing is what lets a page that connects mid-run replay the stored events
and then continue live without a gap (see inference.consumers).
"""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db.models import Max

from kernels.events import run_group
from kernels.models import OptimizationRun, RunEvent

logger = logging.getLogger(__name__)


class Transcript:
    """The append-only event log of one run; one writer (the run loop) at a time."""

    def __init__(self, run: OptimizationRun):
        self.run = run
        self._seq = RunEvent.objects.filter(run=run).aggregate(last=Max("seq"))["last"] or 0
        self._layer = get_channel_layer()

    def append(self, kind: str, *, text: str = "", data: dict | None = None, round: int = 0) -> RunEvent:
        self._seq += 1
        event = RunEvent.objects.create(
            run=self.run, seq=self._seq, kind=kind, text=text, data=data or {}, round=round
        )
        self.publish(event.as_message())
        return event

    def publish(self, message: dict) -> None:
        """Send to live viewers; a broken layer loses liveness, never the stored transcript."""
        if self._layer is None:
            return
        try:
            async_to_sync(self._layer.group_send)(run_group(self.run.pk), {"type": "arena.event", "event": message})
        except Exception:
            logger.exception("could not publish event of run %s", self.run.pk)

    def status(self, *, round: int = 0) -> RunEvent:
        run = self.run
        return self.append(
            RunEvent.Kind.STATUS,
            text=run.get_status_display(),
            data={"status": run.status, "rounds_completed": run.rounds_completed, "error": run.error},
            round=round,
        )
