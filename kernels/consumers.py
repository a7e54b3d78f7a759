"""WebSocket consumers that forward live events of a kernel or a leaderboard to the browser.

Each socket joins one group (see kernels.events) and relays its events as JSON; it accepts
nothing from the client, so a page can only listen.
"""

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from kernels.events import candidate_group, leaderboard_group


class EventsConsumer(AsyncJsonWebsocketConsumer):
    """Subclasses say which group a socket listens to with `group_name()`."""

    async def connect(self):
        self.group = self.group_name()
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
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
    def group_name(self) -> str:
        return candidate_group(int(self.scope["url_route"]["kwargs"]["candidate_id"]))


class LeaderboardEventsConsumer(EventsConsumer):
    def group_name(self) -> str:
        return leaderboard_group(self.scope["url_route"]["kwargs"]["arch"])
