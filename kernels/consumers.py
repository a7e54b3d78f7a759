"""WebSocket consumers that forward live events of a kernel or a leaderboard to the browser.

Each socket joins one group (see kernels.events) and relays its events as JSON; it accepts
nothing from the client, so a page can only listen. A socket opens only for whoever may see
its page (kernels.models.visibility).
"""

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth.models import AnonymousUser

from kernels.events import candidate_group, leaderboard_group
from kernels.models import Candidate


class EventsConsumer(AsyncJsonWebsocketConsumer):
    """Subclasses say which group a socket listens to with `group_name()`, and who may listen
    with `may_listen(user)` (run in a thread: it may read the database)."""

    group: str | None = None  # set once the socket is let in

    def may_listen(self, user) -> bool:
        return True

    async def connect(self):
        user = self.scope.get("user", AnonymousUser())
        if not await database_sync_to_async(self.may_listen)(user):
            await self.close()  # before accepting: the handshake is refused, as a page's 404
            return
        self.group = self.group_name()
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        """Listening sockets ignore what the client sends."""

    async def dispatch(self, message):
        # Channels closes stale database connections before every message, in a worker thread:
        # a thread hop per live event, for handlers that touch no database (the replay's reads
        # go through database_sync_to_async, which closes them itself).
        if message["type"] == "court.event":
            await self.court_event(message)
        else:
            await super().dispatch(message)

    async def court_event(self, message):
        await self.send_json(message["event"])


class CandidateEventsConsumer(EventsConsumer):
    def candidate_id(self) -> int:
        return int(self.scope["url_route"]["kwargs"]["candidate_id"])

    def may_listen(self, user) -> bool:
        return Candidate.objects.visible_to(user).filter(pk=self.candidate_id()).exists()

    def group_name(self) -> str:
        return candidate_group(self.candidate_id())


class LeaderboardEventsConsumer(EventsConsumer):
    def group_name(self) -> str:
        return leaderboard_group(self.scope["url_route"]["kwargs"]["arch"])
