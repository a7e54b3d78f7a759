"""Optimization runs: one person's request to have a model optimize one problem, over rounds."""

import secrets

from django.conf import settings
from django.db import models
from django.urls import reverse

from court.models.visibility import ProblemVisibility, RunQuerySet
from jobrows.models import JobRow


def new_link_key() -> str:
    return secrets.token_urlsafe(16)


class OptimizationRun(JobRow):
    """A job row (jobrows.models): the one message that may run its loop (inference.runs), how many
    loops started on it, and its times are there."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Generating"
        WAITING = "waiting", "Waiting for verdicts"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    FINISHED = (Status.DONE, Status.FAILED, Status.CANCELLED)

    problem = models.ForeignKey("kernels.Problem", on_delete=models.CASCADE, related_name="runs")
    requester = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    session_key = models.CharField(max_length=64, blank=True, help_text="Owner of an anonymous run")
    # The run's link opens it where its problem is a paste no one else may see (court.run_links).
    link_key = models.CharField(max_length=32, default=new_link_key, help_text="The secret in the run's link")
    backend = models.CharField(max_length=32, default="builtin")
    model_name = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    max_rounds = models.PositiveSmallIntegerField(default=2)
    rounds_completed = models.PositiveSmallIntegerField(default=0)
    target_speedup = models.FloatField(null=True, blank=True)
    prompt_template = models.CharField(max_length=100, blank=True, help_text="Template name and version used")
    # Public: what stopped the run and what to do (court.models.internal_details); the raw error is staff's.
    error = models.TextField(blank=True)
    error_detail = models.TextField(blank=True, help_text="Staff only: the raw error behind `error`")
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    # The run loop's last sign of life, by which the reconciler tells a dead loop (inference.runs).
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Transcript sequence numbers up to this one are taken (inference.transcript): a loop that
    # resumes the run numbers its events after it, never again one a viewer may have received.
    seq_reserved = models.PositiveIntegerField(default=0)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(max_rounds__gte=1, max_rounds__lte=20), name="run_rounds_between_1_and_20"),
            models.CheckConstraint(
                condition=models.Q(rounds_completed__lte=models.F("max_rounds")),
                name="run_rounds_completed_within_limit",
            ),
            models.CheckConstraint(
                condition=models.Q(target_speedup__isnull=True) | models.Q(target_speedup__gt=0),
                name="run_target_speedup_positive",
            ),
        ]

    def __str__(self):
        return f"Run {self.pk} on {self.problem.label}"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    def get_absolute_url(self):
        """The run's link: with its key where its problem is a paste (unlisted), whose run only
        the link opens."""
        url = reverse("inference:run", args=[self.pk])
        return f"{url}?key={self.link_key}" if self.problem.visibility == ProblemVisibility.UNLISTED else url
