"""Proof checks: a hack report's breaking inputs, run against the kernel on one architecture."""

from django.db import models

from jobrows.models import JobRowWithQueue


class ProofCheck(JobRowWithQueue):
    """A job row (jobrows.models), as an Evaluation is (verification.proofs): the one message that
    may run it, and which worker started it when, for the reconciler to tell a lost job from one under way."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        HOLDS = "holds", "Kernel still correct on the proof's inputs"
        BREAKS = "breaks", "Kernel fails on the proof's inputs"
        FAILED = "failed", "Could not be checked"

    report = models.ForeignKey("kernels.HackReport", on_delete=models.CASCADE, related_name="proof_checks")
    arch = models.CharField(max_length=32)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    reason = models.TextField(blank=True)
    verdict = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["report", "arch"]
        constraints = [models.UniqueConstraint(fields=["report", "arch"], name="proofcheck_unique_per_arch")]

    def __str__(self):
        return f"proof of report {self.report_id} on {self.arch}: {self.status}"
