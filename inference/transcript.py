"""Writing a run's transcript: publish each event to the run's group, store events in batches.

An event goes to the run's group at once and into the database with the next batch, at most
WRITE_INTERVAL_S later: storing each event before sending it cost an INSERT and a commit on the
send path (benchmarks/RESULTS.md, streaming latency). A status change is the exception: it is
stored together with everything pending before it, and only then published, so when
`Transcript.status` returns the transcript up to that event is in the database; the run's row
takes its new status only after that. The run loop's status changes, and so the end of every
run, go through it.

A page that connects mid-run replays what is stored and then continues live; events published
before it joined and not stored yet are read back from the database by sequence number once they
are (see inference.consumers).

What a crash loses: a worker process that dies (killed, out of memory) loses the events it
published but had not stored yet, normally the last WRITE_INTERVAL_S of each of its runs, more if
the database was unreachable meanwhile (pending events wait in memory and are retried). Viewers saw
them live; the stored transcript, and so a reload, ends before them. The reconciler resumes the run
(inference.runs); the resumed loop numbers its events above every number the dead one reserved, so
no viewer is sent two events with one number. A process that exits normally stores what is pending
first.
"""

import atexit
import logging
import math
import threading
import time
from collections.abc import Callable

from django.db import IntegrityError, close_old_connections, connections, transaction
from django.db.models import F, Max
from django.db.models.functions import Greatest

from court.live.broadcast import call_later, stream_to_group
from court.live.events import run_group
from court.models import OptimizationRun, RunEvent

logger = logging.getLogger(__name__)

# A run sends at most one delta event per window: deltas arriving within it are held and sent
# (and stored) as one event when it ends. A model streaming 200 tokens a second per run would
# otherwise cost 200 messages and rows per run-second. It is also the longest a delta is held.
# Keep it well below the gap between a model's deltas: at 20 deltas/s a 50 ms window held most
# deltas for ~35 ms, each window starting where the last one ended (benchmarks/RESULTS.md).
DELTA_WINDOW_S = 0.02

# How long published deltas wait to be stored with others: one INSERT per batch instead of per
# event, and the longest a page connecting mid-run waits for the deltas it missed.
WRITE_INTERVAL_S = 0.1
# Sequence numbers a transcript takes at a time (one UPDATE of the run per this many events).
SEQ_BLOCK = 1000
# After this long with nothing to store, the writer gives its database connection back.
IDLE_S = 5


class TranscriptWriter:
    """Stores the events of every run in this process in batches, from a daemon thread.

    Batches are written one at a time, in the order their events were added, so once an event
    is stored every earlier event of its run is too.
    """

    def __init__(self, interval_s: float):
        self.interval_s = interval_s
        self._pending: list[RunEvent] = []
        self._lock = threading.Lock()  # guards _pending
        self._writing = threading.Lock()  # one batch at a time
        self._work = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, event: RunEvent) -> None:
        with self._lock:
            self._pending.append(event)
            self._work.set()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="transcript writer", daemon=True)
                self._thread.start()

    def flush(self) -> None:
        """Store everything pending, in the caller's thread; raises what the database raised,
        and the events stay pending for the next try."""
        with self._writing:
            with self._lock:
                batch, self._pending = self._pending, []
            if not batch:
                return
            try:
                _store(batch)
            except Exception:
                with self._lock:
                    self._pending[:0] = batch
                raise

    def _run(self) -> None:
        while True:
            if not self._work.wait(timeout=IDLE_S):
                connections.close_all()  # this thread's: an idle writer holds no database connection
                self._work.wait()
            time.sleep(self.interval_s)
            self._work.clear()
            try:
                close_old_connections()
                self.flush()
            except Exception:
                logger.exception("could not store transcript events; retrying in %s s", self.interval_s)
                self._work.set()


def _store(batch: list[RunEvent]) -> None:
    try:
        with transaction.atomic():
            RunEvent.objects.bulk_create(batch)
        return
    except IntegrityError:
        pass
    # A run deleted meanwhile fails the whole batch: store run by run and drop only its events.
    by_run: dict[int, list[RunEvent]] = {}
    for event in batch:
        by_run.setdefault(event.run_id, []).append(event)
    for run_id, events in by_run.items():
        try:
            with transaction.atomic():
                RunEvent.objects.bulk_create(events)
        except IntegrityError:
            logger.exception(
                "dropped %d transcript events of run %s (seq %d-%d)", len(events), run_id, events[0].seq, events[-1].seq
            )


writer = TranscriptWriter(WRITE_INTERVAL_S)


@atexit.register
def _store_pending_at_exit() -> None:
    try:
        writer.flush()
    except Exception:
        logger.exception("transcript events still pending at exit are lost")


class Transcript:
    """The append-only event log of one run, written by the run loop; held deltas may be sent
    from a timer thread, hence the lock."""

    def __init__(self, run: OptimizationRun):
        self.run = run
        # Numbers are taken in blocks recorded on the run before any is used, so a loop that resumes
        # the run after another died starts above every number that loop may have published
        # (and not stored): a viewer never receives two events with one number.
        reserved = OptimizationRun.objects.filter(pk=run.pk).values_list("seq_reserved", flat=True).first() or 0
        stored = RunEvent.objects.filter(run=run).aggregate(last=Max("seq"))["last"] or 0
        self._seq = self._reserved = max(reserved, stored)
        # Events numbered up to here that are not stored now never will be: the first event says so.
        self._resumes_after = self._seq or None
        self._lock = threading.Lock()
        self._held: tuple[str, int, list[str]] | None = None  # (kind, round, texts) not yet sent
        self._last_sent_at = -math.inf
        self._timer_set = False

    def append_delta(self, kind: str, text: str, *, round: int = 0) -> None:
        """A streamed piece of reasoning or answer: sent at once, unless the previous delta went
        out less than DELTA_WINDOW_S ago; then it is held with any others that follow and sent
        when the window ends (or with any other event, or by `flush`). Stored in a batch."""
        with self._lock:
            if self._held is not None and self._held[:2] != (kind, round):
                self._send_held()
            if self._held is None:
                self._held = (kind, round, [])
            self._held[2].append(text)
            wait = self._last_sent_at + DELTA_WINDOW_S - time.monotonic()
            if wait <= 0:
                self._send_held()
            elif not self._timer_set:
                self._timer_set = True
                call_later(wait, self._window_ended)

    def flush(self) -> None:
        """Send the held deltas, if any; they are stored with the next batch."""
        with self._lock:
            self._send_held()

    def append(self, kind: str, *, text: str = "", data: dict | None = None, round: int = 0) -> RunEvent:
        """Any event but a delta or a status change: sent at once, after what is held; stored
        with the next batch."""
        with self._lock:
            self._send_held()
            event = self._next_event(kind, text=text, data=data, round=round)
            writer.add(event)
            self.publish(event.as_message())
            return event

    def _window_ended(self) -> None:
        with self._lock:
            self._timer_set = False
            self._send_held()

    def _send_held(self) -> None:
        if self._held is not None:
            kind, round, texts = self._held
            self._held = None
            # The window starts now, not when the layer has taken the event: a delta per window
            # would otherwise be held for as long as sending the previous one took, every time.
            self._last_sent_at = time.monotonic()
            event = self._next_event(kind, text="".join(texts), data=None, round=round)
            writer.add(event)
            self.publish(event.as_message())

    def _next_event(self, kind: str, *, text: str, data: dict | None, round: int) -> RunEvent:
        self._seq += 1
        if self._seq > self._reserved:
            self._reserve()
        data = data or {}
        if self._resumes_after is not None:
            data, self._resumes_after = {**data, "resumes_after": self._resumes_after}, None
        return RunEvent(run=self.run, seq=self._seq, kind=kind, text=text, data=data, round=round)

    def _reserve(self) -> None:
        with transaction.atomic():
            runs = OptimizationRun.objects.filter(pk=self.run.pk)
            runs.update(seq_reserved=Greatest(F("seq_reserved"), self._seq - 1) + SEQ_BLOCK)
            self._reserved = runs.values_list("seq_reserved", flat=True).get()
        self._seq = max(self._seq, self._reserved - SEQ_BLOCK + 1)

    def publish(self, message: dict) -> None:
        """Send to live viewers, in order (callers hold the lock); a broken layer loses liveness
        (logged), never the stored transcript."""
        stream_to_group(run_group(self.run.pk), {"type": "court.event", "event": message})

    def status(self, *, round: int = 0, save_run: Callable[[], object] = lambda: None) -> RunEvent:
        """A change of the run's status (already set on `self.run`): the event is stored with
        everything before it, then `save_run` saves the run's row, then the event is sent. So
        whoever reads the run's new status from the database finds its whole transcript there."""
        run = self.run
        with self._lock:
            self._send_held()
            event = self._next_event(
                RunEvent.Kind.STATUS,
                text=run.get_status_display(),
                data={"status": run.status, "rounds_completed": run.rounds_completed, "error": run.error},
                round=round,
            )
            writer.add(event)
            writer.flush()
            save_run()
            self.publish(event.as_message())
            return event
