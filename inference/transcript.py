"""Writing a run's transcript: store each event, then publish it to the run's group.

Storing before publishing is what lets a page that connects mid-run replay the stored events
and then continue live without a gap (see inference.consumers).
"""

import logging
import time

from django.db.models import Max

from kernels.broadcast import group_send
from kernels.events import run_group
from kernels.models import OptimizationRun, RunEvent

logger = logging.getLogger(__name__)

# Deltas arriving closer together than this are stored and sent as one event: a model streaming
# 50 tokens a second per run would otherwise cost 50 database rows and 50 messages per run-second.
DELTA_WINDOW_S = 0.1


class Transcript:
    """The append-only event log of one run; one writer (the run loop) at a time."""

    def __init__(self, run: OptimizationRun):
        self.run = run
        self._seq = RunEvent.objects.filter(run=run).aggregate(last=Max("seq"))["last"] or 0
        self._pending: tuple[str, int, list[str]] | None = None  # (kind, round, texts) not yet stored
        self._last_delta_at = 0.0

    def append_delta(self, kind: str, text: str, *, round: int = 0) -> None:
        """A streamed piece of reasoning or answer: stored and sent at once, unless the previous one
        went out less than DELTA_WINDOW_S ago; then it joins the pieces held until the window ends
        (sent with the next delta after that, with any other event, or by `flush`)."""
        if self._pending is not None and self._pending[:2] != (kind, round):
            self.flush()
        if self._pending is None:
            self._pending = (kind, round, [])
        self._pending[2].append(text)
        now = time.monotonic()
        if now - self._last_delta_at >= DELTA_WINDOW_S:
            self.flush()
            self._last_delta_at = now

    def flush(self) -> None:
        """Store and send the held deltas, if any."""
        if self._pending is not None:
            kind, round, texts = self._pending
            self._pending = None
            self._store(kind, text="".join(texts), data=None, round=round)

    def append(self, kind: str, *, text: str = "", data: dict | None = None, round: int = 0) -> RunEvent:
        self.flush()
        return self._store(kind, text=text, data=data, round=round)

    def _store(self, kind: str, *, text: str, data: dict | None, round: int) -> RunEvent:
        self._seq += 1
        event = RunEvent.objects.create(
            run=self.run, seq=self._seq, kind=kind, text=text, data=data or {}, round=round
        )
        self.publish(event.as_message())
        return event

    def publish(self, message: dict) -> None:
        """Send to live viewers; a broken layer loses liveness, never the stored transcript."""
        try:
            group_send(run_group(self.run.pk), {"type": "arena.event", "event": message})
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
