"""WebSocket routes."""

from django.urls import path

from inference.consumers import RunConsumer
from kernels.consumers import CandidateEventsConsumer, LeaderboardEventsConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
    path("ws/kernels/<int:candidate_id>/", CandidateEventsConsumer.as_asgi()),
    path("ws/leaderboard/<slug:arch>/", LeaderboardEventsConsumer.as_asgi()),
]
