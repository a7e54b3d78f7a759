"""WebSocket routes, and the stack every socket goes through: same-origin check, session, route."""

from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from django.urls import path

from config.origins import SameOriginValidator
from court.consumers import CandidateEventsConsumer, LeaderboardEventsConsumer
from inference.consumers import RunConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
    path("ws/kernels/<int:candidate_id>/", CandidateEventsConsumer.as_asgi()),
    path("ws/leaderboard/<slug:arch>/", LeaderboardEventsConsumer.as_asgi()),
]

websocket_application = SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
