"""The run's WebSocket: replay the stored transcript, then continue live.

The socket joins the run's group before it reads the stored events, so every event is either
in what it reads or among the live messages queued behind the replay; those it has already
replayed (by sequence number) are dropped.
"""

from channels.db import database_sync_to_async

from kernels.consumers import EventsConsumer
from kernels.events import evaluation_event, run_group
from kernels.models import Evaluation
from kernels.selectors import run_transcript


def current_evaluations(run_id: int) -> list[dict]:
    evaluations = Evaluation.objects.filter(candidate__run_id=run_id).order_by("candidate_id", "arch")
    return [evaluation_event(evaluation) for evaluation in evaluations]


class RunConsumer(EventsConsumer):
    def group_name(self) -> str:
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        return run_group(self.run_id)

    async def connect(self):
        self.replayed_seq = 0
        await super().connect()
        transcript = await database_sync_to_async(run_transcript)(self.run_id)
        for message in transcript:
            await self.send_json({**message, "replay": True})
        if transcript:
            self.replayed_seq = transcript[-1]["seq"]
        for message in await database_sync_to_async(current_evaluations)(self.run_id):
            await self.send_json({**message, "replay": True})
        await self.send_json({"kind": "replayed", "seq": self.replayed_seq})

    async def arena_event(self, message):
        event = message["event"]
        if event.get("seq") is not None and event["seq"] <= self.replayed_seq:
            return
        await self.send_json(event)
