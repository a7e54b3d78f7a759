"""WebSocket consumers that forward live events of a kernel or a leaderboard to the browser.

Each socket joins one group (see court.live.events) and relays its events as JSON; it accepts
nothing from the client, so a page can only listen. A socket opens only for what exists and whoever
may see its page (court.models.visibility); any other is refused at the handshake, as a page's 404.
When staff change what may be seen, the groups concerned are told to look again (court.live.events,
`recheck`): a socket whose viewer may no longer see what it follows is closed the same way.
"""

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth.models import AnonymousUser

from court import leaderboard
from court.live.events import candidate_group, leaderboard_group
from court.models import Candidate
from court.run_links import held_runs

# The close code of a handshake refused because what the socket would follow does not exist.
NOT_FOUND = 4404


class EventsConsumer(AsyncJsonWebsocketConsumer):
    """Subclasses say which group a socket listens to with `group_name()`, and whether what it
    follows exists and `user` may see it with `may_listen(user)` (run in a thread: it may read the
    database)."""

    group = None

    async def connect(self) -> bool:
        user = self.scope.get("user", AnonymousUser())
        if not await database_sync_to_async(self.may_listen)(user):
            await self.close(code=NOT_FOUND)
            return False
        self.group = self.group_name()
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        return True

    async def disconnect(self, code):
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        """Listening sockets ignore what the client sends, unparsed: a frame that is not JSON
        would otherwise close the socket with a traceback."""

    async def dispatch(self, message):
        # Channels closes stale database connections before every message, in a worker thread:
        # a thread hop per live event, for handlers that touch no database (the replay's reads
        # go through database_sync_to_async, which closes them itself).
        if message["type"] == "court.event":
            await self.court_event(message)
        elif message["type"] == "court.recheck":
            await self.court_recheck(message)
        else:
            await super().dispatch(message)

    async def court_event(self, message):
        await self.send_json(message["event"])

    async def court_recheck(self, message):
        if not await database_sync_to_async(self.may_listen)(self.scope.get("user", AnonymousUser())):
            await self.close(code=NOT_FOUND)


class CandidateEventsConsumer(EventsConsumer):
    def candidate_id(self) -> int:
        return int(self.scope["url_route"]["kwargs"]["candidate_id"])

    def may_listen(self, user) -> bool:
        runs = held_runs(self.scope.get("session"))
        return Candidate.objects.visible_to(user, runs=runs).filter(pk=self.candidate_id()).exists()

    def group_name(self) -> str:
        return candidate_group(self.candidate_id())


class LeaderboardEventsConsumer(EventsConsumer):
    def may_listen(self, user) -> bool:
        return leaderboard.arch_exists(self.scope["url_route"]["kwargs"]["arch"])

    def group_name(self) -> str:
        return leaderboard_group(self.scope["url_route"]["kwargs"]["arch"])
