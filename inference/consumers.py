"""The run's WebSocket: replay the stored transcript, then continue live.

The socket joins the run's group before it reads the stored events, so every event published
after that is among the live messages queued behind the replay; those it has already sent (by
sequence number) are dropped. Events other than status changes are published before they are
stored (inference.transcript): those published before the socket joined and not stored when it
read the transcript show up as a gap in the sequence numbers of the live events, and are read from
the database once stored.

Every message, replayed or live, goes through the viewer's court.selectors.RunRedaction: a kernel
staff hid from them is never sent, nor what quotes it. When staff hide or show a kernel the socket
replays the whole transcript again, redacted anew, and the page rebuilds itself from it.
"""

import asyncio
import logging
import time

from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser

from court.consumers import NOT_FOUND, EventsConsumer
from court.live.events import evaluation_event, run_group
from court.models import Evaluation, OptimizationRun
from court.run_links import held_runs
from court.selectors import RunRedaction, run_events_between, run_transcript
from inference.presentation import with_highlighted_code
from inference.transcript import WRITE_INTERVAL_S

logger = logging.getLogger(__name__)

# How long a socket waits for missed events to be stored before it goes on without them (their
# worker died first): many times the writer's interval, which is how long they normally take.
MISSED_EVENTS_WAIT_S = 50 * WRITE_INTERVAL_S


def current_evaluations(run_id: int) -> list[dict]:
    evaluations = Evaluation.objects.filter(candidate__run_id=run_id).order_by("candidate_id", "arch")
    return [evaluation_event(evaluation) for evaluation in evaluations]


class RunConsumer(EventsConsumer):
    def may_listen(self, user) -> bool:
        runs = held_runs(self.scope.get("session"))
        return OptimizationRun.objects.visible_to(user, runs=runs).filter(pk=self.run_id).exists()

    def group_name(self) -> str:
        return run_group(self.run_id)

    async def connect(self):
        self.sent_seq = 0
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        if not await super().connect():
            return
        await self.replay()

    async def replay(self):
        """The stored transcript and the evaluations' state, as this viewer may see them now; live
        events numbered after the transcript's last one follow (court_event)."""
        user = self.scope.get("user", AnonymousUser())
        self.redaction = await database_sync_to_async(RunRedaction.of)(self.run_id, user=user)
        transcript = await database_sync_to_async(run_transcript)(self.run_id, redaction=self.redaction)
        for message in transcript:
            await self.send_json({**with_highlighted_code(message), "replay": True})
        # A replay again (court_recheck) may end before what was sent live: that is read again too.
        self.sent_seq = transcript[-1]["seq"] if transcript else 0
        for message in self.redaction.messages(await database_sync_to_async(current_evaluations)(self.run_id)):
            await self.send_json({**message, "replay": True})
        await self.send_json({"kind": "replayed", "seq": self.sent_seq})

    async def court_recheck(self, message):
        """Staff changed what may be seen: closed where the viewer may no longer see the run, else
        replayed as they may see it now."""
        if not await database_sync_to_async(self.may_listen)(self.scope.get("user", AnonymousUser())):
            await self.close(code=NOT_FOUND)
            return
        await self.replay()

    async def court_event(self, message):
        event = self.redaction.message(message["event"])
        if event is None:
            return
        seq = event.get("seq")
        if seq is not None:
            if seq <= self.sent_seq:
                return
            if seq > self.sent_seq + 1:
                # A loop that resumed the run after another died says up to where nothing more will
                # be stored: what is stored is all there is, no need to wait for the rest.
                resumed = (event.get("data") or {}).get("resumes_after") is not None
                for missed in await self.stored_events(after=self.sent_seq, before=seq, wait=not resumed):
                    await self.send_json(with_highlighted_code(missed))
            self.sent_seq = seq
        await self.send_json(with_highlighted_code(event))

    async def stored_events(self, *, after: int, before: int, wait: bool = True) -> list[dict]:
        """Events after..before (exclusive) from the database, waiting until they are all stored."""
        deadline = time.monotonic() + MISSED_EVENTS_WAIT_S
        while True:
            events = await database_sync_to_async(run_events_between)(
                self.run_id, after=after, before=before, redaction=self.redaction
            )
            if len(events) == before - after - 1 or not wait:
                return events
            if time.monotonic() > deadline:
                logger.error(
                    "run %s: events %d-%d never reached the database; the page goes on without %d of them",
                    self.run_id,
                    after + 1,
                    before - 1,
                    before - after - 1 - len(events),
                )
                return events
            await asyncio.sleep(WRITE_INTERVAL_S / 2)
