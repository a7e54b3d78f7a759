"""Candidates: proposed `ModelNew` replacements, and the published claims made about them.

A candidate becomes a kernel once one evaluation verifies it; staff curate kernels.
"""

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from court.models.visibility import CandidateQuerySet, Curation
from evaluation.harness.static_analysis import KINDS


class Candidate(models.Model):
    class Origin(models.TextChoices):
        MODEL = "model", "Generated in a run"
        PERSON = "person", "Submitted by a person"
        IMPORT = "import", "Imported"

    class Language(models.TextChoices):
        CUDA = "cuda", "CUDA"
        TRITON = "triton", "Triton"
        PYTORCH = "pytorch", "PyTorch"

    problem = models.ForeignKey("kernels.Problem", on_delete=models.CASCADE, related_name="candidates")
    run = models.ForeignKey("kernels.OptimizationRun", null=True, blank=True, on_delete=models.CASCADE, related_name="candidates")
    origin = models.CharField(max_length=16, choices=Origin.choices)
    origin_label = models.CharField(max_length=64, blank=True, help_text="Where an import came from, e.g. cuda-l1")
    round = models.PositiveSmallIntegerField(null=True, blank=True)
    code = models.TextField()
    language = models.CharField(max_length=16, choices=Language.choices)
    # What it does to be fast (static_analysis.optimization_kind), read from its code and its problem's.
    kind = models.CharField(max_length=16, choices=list(KINDS.items()), blank=True, db_index=True)
    source_hash = models.CharField(max_length=64, db_index=True, help_text="sha256 of the code, byte for byte")
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="candidates"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    curation = models.CharField(max_length=16, choices=Curation.choices, default=Curation.LISTED)
    curation_reason = models.TextField(blank=True)
    curated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    curated_at = models.DateTimeField(null=True, blank=True)

    objects = CandidateQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["problem", "source_hash"],
                condition=models.Q(run__isnull=True),
                name="candidate_unique_code_per_problem_outside_runs",
            ),
            models.UniqueConstraint(
                fields=["run", "source_hash"],
                condition=models.Q(run__isnull=False),
                name="candidate_unique_code_per_run",
            ),
            models.CheckConstraint(
                condition=~models.Q(origin="model") | models.Q(run__isnull=False, round__gte=1),
                name="candidate_from_model_has_run_and_round",
            ),
        ]

    def __str__(self):
        return f"Candidate {self.pk} for {self.problem.label}"

    def get_absolute_url(self):
        return reverse("kernels:candidate", args=[self.pk])

    def curate(self, *, state: str, by, reason: str = "") -> None:
        """Set the curation state, recording who set it and when."""
        if state not in Curation.values:
            raise ValueError(f"Unknown curation state {state!r}; choose one of {', '.join(Curation.values)}.")
        if state == Curation.DELISTED and not reason:
            raise ValueError("Delisting shows its reason publicly: give the confirmed hack as the reason.")
        self.curation = state
        self.curation_reason = reason
        self.curated_by = by
        self.curated_at = timezone.now()
        self.save(update_fields=["curation", "curation_reason", "curated_by", "curated_at"])


class Claim(models.Model):
    """A speedup someone else published for a candidate: shown beside our measurements, never instead."""

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="claims")
    source = models.CharField(max_length=64, help_text="Who published it, e.g. cuda-l1")
    arch = models.CharField(max_length=32, help_text="The architecture it was measured on, e.g. h100")
    speedup_eager = models.FloatField(null=True, blank=True)
    speedup_compile = models.FloatField(null=True, blank=True)
    speedup_compile_ro = models.FloatField(null=True, blank=True)
    speedup_cudagraph = models.FloatField(null=True, blank=True)
    speedup_cudnn = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["arch"]
        constraints = [
            models.UniqueConstraint(fields=["candidate", "source", "arch"], name="claim_unique_per_source_and_arch"),
        ]

    def __str__(self):
        return f"{self.source} claims {self.speedup_eager}x on {self.arch} for candidate {self.candidate_id}"
