"""The leaderboard as computed: what its pages, API and export read, kept until something changes.

`LeaderboardVersion` is one row whose token is replaced once a change that the leaderboard may show
commits (court.leaderboard.changed); `LeaderboardSnapshot` keeps what was computed under a token.
A snapshot of a replaced token is never read again.
"""

from django.db import models


class LeaderboardVersion(models.Model):
    token = models.CharField(max_length=32)
    changed_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"leaderboard version {self.token}"


class LeaderboardSnapshot(models.Model):
    version = models.CharField(max_length=32)
    key = models.CharField(max_length=200, help_text="What it holds, e.g. board:h100, archs, export:h100")
    body = models.TextField(help_text="JSON (a board, the architectures) or the export's JSONL, as served")
    computed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "key"], name="leaderboard_snapshot_unique_per_version")]

    def __str__(self):
        return f"{self.key} under {self.version}"
