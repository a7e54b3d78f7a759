"""Problems: PyTorch modules in KernelBench form, the thing every candidate replaces."""

from django.conf import settings
from django.db import models
from django.urls import reverse

from court.models.visibility import ProblemQuerySet, ProblemVisibility


class Problem(models.Model):
    class Origin(models.TextChoices):
        KERNELBENCH = "kernelbench", "KernelBench"
        USER = "user", "Pasted by a person"

    Visibility = ProblemVisibility

    title = models.CharField(max_length=200, blank=True)
    source = models.TextField()
    normalized_hash = models.CharField(
        max_length=64, unique=True, help_text="sha256 of the source with comments and layout normalized away"
    )
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.USER)
    level = models.PositiveSmallIntegerField(null=True, blank=True)
    task = models.PositiveSmallIntegerField(null=True, blank=True)
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="problems"
    )
    visibility = models.CharField(max_length=16, choices=Visibility.choices, default=Visibility.LISTED)
    degenerate = models.BooleanField(
        null=True, blank=True, help_text="Output constant or independent of the inputs; unknown until inspected"
    )
    degenerate_reason = models.TextField(blank=True)
    counts_in_statistics = models.BooleanField(
        default=False, help_text="Count this problem in the summary statistics even though it is degenerate"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ProblemQuerySet.as_manager()

    class Meta:
        ordering = ["level", "task", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["level", "task"],
                condition=models.Q(origin="kernelbench"),
                name="problem_unique_kernelbench_task",
            ),
            models.CheckConstraint(
                condition=~models.Q(origin="kernelbench")
                | models.Q(level__isnull=False, task__isnull=False, level__gte=1, task__gte=1),
                name="problem_kernelbench_has_level_and_task",
            ),
        ]

    def __str__(self):
        return f"{self.label}: {self.title}" if self.title else self.label

    @property
    def label(self) -> str:
        if self.origin == self.Origin.KERNELBENCH:
            return f"L{self.level} T{self.task}"
        return f"Problem {self.pk}"

    def get_absolute_url(self):
        return reverse("kernels:problem", args=[self.pk])
