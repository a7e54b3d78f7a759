"""Releases: files of verdicts measured by the harness on a real GPU (evaluation.harness.release),
imported (verification.releases). Each imported evaluation names the release it came from, so it
is never taken for a live worker's.
"""

from django.db import models

from evaluation.harness import HARNESS_VERSION


class Release(models.Model):
    name = models.CharField(max_length=100, unique=True)
    arch = models.CharField(max_length=32, db_index=True, help_text="The architecture its verdicts were measured on")
    harness_version = models.CharField(max_length=32)
    harness_commit = models.CharField(max_length=64, help_text="The git commit of the harness that measured")
    harness_dirty = models.BooleanField(null=True, help_text="The harness had uncommitted changes; unknown without git")
    device = models.CharField(max_length=16)
    env = models.JSONField(default=dict, blank=True, help_text="Where it was measured: GPU, driver, CUDA, torch, triton, Python")
    measured_from = models.DateTimeField()
    measured_at = models.DateTimeField(help_text="When its last verdict was measured")
    sha256 = models.CharField(max_length=64, unique=True, help_text="Of the file, byte for byte")
    header = models.JSONField(default=dict, blank=True, help_text="The file's header: plan, limits, baselines, sources")
    entries = models.PositiveIntegerField()
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["arch", "-measured_at"]

    def __str__(self):
        return self.name

    @property
    def is_outdated(self) -> bool:
        """Measured by another harness than the one that runs now: its verdicts are kept and shown as
        such, never counted with the current ones (court.models.visibility's `current`)."""
        return self.harness_version != HARNESS_VERSION

    @property
    def measured_on(self) -> str:
        return self.env.get("gpu") or self.env.get("device") or self.device

    @property
    def sources(self) -> list[dict]:
        return self.header.get("sources") or []
