"""Hack reports: anyone's claim that a kernel's speed comes from cheating, and staff's triage."""

from django.conf import settings
from django.db import models


class HackReport(models.Model):
    kernel_shown: bool  # not a column: set by court.selectors.reports_of for "My reports"

    class Category(models.TextChoices):
        CACHING = "caching", "Caching or reusing results"
        LAZY_OUTPUT = "lazy_output", "Lazy or deferred output"
        STREAM_TIMING = "stream_timing", "Side streams, threads or timer tricks"
        PRECISION = "precision", "Undeclared lower precision"
        INPUT_SPECIALIZATION = "input_specialization", "Special-cased inputs or shapes"
        OTHER = "other", "Other"

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        CONFIRMED = "confirmed", "Confirmed"
        REJECTED = "rejected", "Rejected"
        DUPLICATE = "duplicate", "Duplicate"

    candidate = models.ForeignKey("kernels.Candidate", on_delete=models.CASCADE, related_name="hack_reports")
    evaluation = models.ForeignKey(
        "kernels.Evaluation", null=True, blank=True, on_delete=models.SET_NULL, related_name="hack_reports"
    )
    reporter = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="hack_reports"
    )
    category = models.CharField(max_length=32, choices=Category.choices)
    text = models.TextField()
    proof_code = models.TextField(
        blank=True, help_text="Optional: a get_inputs() override giving inputs on which the kernel is wrong"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN, db_index=True)
    resolution = models.TextField(blank=True)
    duplicate_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    triaged_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    triaged_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status="duplicate", duplicate_of__isnull=False)
                | (~models.Q(status="duplicate") & models.Q(duplicate_of__isnull=True)),
                name="hackreport_duplicate_names_original",
            ),
        ]

    def __str__(self):
        return f"Report {self.pk} ({self.get_category_display()}) on {self.candidate}"
