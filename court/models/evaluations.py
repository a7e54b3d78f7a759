"""Evaluations: one verdict of one candidate on one architecture, with all its measurements.

The whole verdict is kept as the harness wrote it; the figures the leaderboard sorts and
filters on are copied into columns.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import models
from django.utils import timezone

from court.flag_meanings import describe
from court.models.internal_details import public_verdict, without_paths
from court.models.visibility import EvaluationQuerySet
from evaluation.harness import verdict as harness_verdict
from jobrows.models import JobRowWithQueue

# What a speedup says once its 95% interval is read (Speedup.difference).
FASTER, SLOWER, NO_DIFFERENCE, NO_INTERVAL = "faster", "slower", "no measurable difference", "no interval"


@dataclass(frozen=True)
class Speedup:
    """A speedup over one baseline with its 95% interval: what every page, the API and the
    leaderboard's counts read, so that noise is never shown or counted as a win."""

    value: float | None
    interval: list | None = None

    @property
    def difference(self) -> str | None:
        """Faster or slower beyond doubt (the whole interval past 1.01 either way), no measurable
        difference (the interval reaches within 1% of 1), or no interval (an older harness)."""
        if self.value is None:
            return None
        low, high = self.interval if isinstance(self.interval, (list, tuple)) and len(self.interval) == 2 else (None, None)
        if low is None or high is None:
            return NO_INTERVAL
        if low > harness_verdict.BEATS:
            return FASTER
        if high < 1 / harness_verdict.BEATS:
            return SLOWER
        return NO_DIFFERENCE

    @property
    def beats(self) -> bool:
        """A win: faster beyond doubt. Without an interval, never."""
        return self.difference == FASTER


# Baselines by the names templates can read (no hyphen), in the leaderboard's order.
SHOWN_BASELINES = {"eager": "eager", "compile": "compile", "compile_ro": "compile-ro", "cudagraph": "cudagraph"}


class Evaluation(JobRowWithQueue):
    """A job row (jobrows.models): its message, queue, attempts, worker and times are there."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        VERIFIED = harness_verdict.VERIFIED, "Verified"
        INCORRECT = harness_verdict.INCORRECT, "Incorrect"
        REJECTED = harness_verdict.REJECTED, "Rejected"
        ERROR = harness_verdict.ERROR, "Error"
        TIMEOUT = harness_verdict.TIMEOUT, "Timed out"
        CRASHED = harness_verdict.CRASHED, "Crashed"
        FAILED = "failed", "Not evaluated (infrastructure failure)"

    PENDING = (Status.QUEUED, Status.RUNNING)

    class Stage(models.TextChoices):
        QUEUED = "queued", "Queued"
        BUILDING = "building", "Building"
        CHECKING = "checking", "Checking"
        TIMING = "timing", "Timing"
        DONE = "done", "Done"

    candidate = models.ForeignKey("kernels.Candidate", on_delete=models.CASCADE, related_name="evaluations")
    arch = models.CharField(max_length=32, db_index=True, help_text="Architecture key, e.g. h100, a100, cpu")
    harness_version = models.CharField(max_length=32)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.QUEUED)
    reason = models.TextField(blank=True, help_text="Public: the deciding check's message, or what failed and what to do")
    # Staff only (court.models.internal_details): who ran it (the job row's worker, with this table's
    # own help text), and the raw error behind a failure of ours.
    worker = models.CharField(max_length=200, blank=True, help_text="Staff only: the worker that ran it (host, device)")
    # Imported from a measured release (verification.releases) rather than run by a worker here.
    release = models.ForeignKey("kernels.Release", null=True, blank=True, on_delete=models.PROTECT, related_name="evaluations")
    error_detail = models.TextField(blank=True, help_text="Staff only: the raw error behind a failure of ours")

    verdict = models.JSONField(default=dict, blank=True)
    precision_tier = models.CharField(max_length=16, blank=True)
    max_abs_error = models.FloatField(null=True, blank=True)
    max_rel_error = models.FloatField(null=True, blank=True)
    candidate_ms = models.FloatField(null=True, blank=True, help_text="Median time of the candidate")
    speedup_eager = models.FloatField(null=True, blank=True)
    speedup_compile = models.FloatField(null=True, blank=True)
    speedup_compile_ro = models.FloatField(null=True, blank=True)
    speedup_cudagraph = models.FloatField(null=True, blank=True)
    flags = models.JSONField(default=list, blank=True)
    env = models.JSONField(default=dict, blank=True, help_text="Environment fingerprint: GPU, driver, CUDA, torch")
    log_excerpt = models.TextField(blank=True)

    harness_seconds = models.FloatField(
        null=True, blank=True, help_text="Wall time of the harness alone; the rest of started→finished is the job's own overhead"
    )

    objects = EvaluationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["candidate", "arch", "harness_version"], name="evaluation_unique_per_arch_and_version"
            ),
            models.CheckConstraint(
                condition=models.Q(speedup_eager__isnull=True) | models.Q(speedup_eager__gt=0),
                name="evaluation_speedup_eager_positive",
            ),
            models.CheckConstraint(
                condition=~models.Q(status="verified") | models.Q(finished_at__isnull=False),
                name="evaluation_verified_is_finished",
            ),
        ]
        indexes = [models.Index(fields=["arch", "status", "harness_version"])]

    def __str__(self):
        return f"{self.candidate} on {self.arch}: {self.status}"

    @property
    def is_pending(self) -> bool:
        return self.status in self.PENDING

    def times_ms(self) -> dict[str, float | None]:
        """The headline measure's median times in ms, this kernel's and each baseline's, to show
        beside the speedups: a 2x of 0.01 ms is not a 2x of 10 ms."""
        baselines = ((self.verdict or {}).get("timing") or {}).get("baselines") or {}
        times = {name: (measured or {}).get("median_ms") for name, measured in baselines.items() if isinstance(measured, dict)}
        return {"candidate": self.candidate_ms, **times}

    MEASURE_LABELS = {"steady_state": "Steady state", "latency": "Latency", "device_time": "Device time"}

    def speedup_interval(self, baseline: str = "eager") -> list[float] | None:
        """The 95% interval of the headline speedup over `baseline`, where the harness measured one."""
        interval = ((self.verdict or {}).get("timing") or {}).get("speedup_intervals", {}).get(baseline)
        return interval if isinstance(interval, list) and len(interval) == 2 else None

    SPEEDUP_FIELDS = {
        "eager": "speedup_eager",
        "compile": "speedup_compile",
        "compile-ro": "speedup_compile_ro",
        "cudagraph": "speedup_cudagraph",
    }

    def speedup(self, baseline: str = "eager") -> Speedup:
        return Speedup(getattr(self, self.SPEEDUP_FIELDS[baseline]), self.speedup_interval(baseline))

    @property
    def speedups(self) -> dict[str, Speedup]:
        """Each baseline's speedup with its interval, keyed as templates can read them."""
        return {name: self.speedup(baseline) for name, baseline in SHOWN_BASELINES.items()}

    def beats(self, baseline: str = "eager") -> bool:
        """Faster than `baseline` beyond doubt: the whole interval above 1.01. A speedup without an
        interval (an older harness) never counts as a win."""
        return self.speedup(baseline).beats

    def flag_rows(self) -> list[tuple[str, str, str]]:
        """Each flag with what it means (court.flag_meanings) and what this verdict found, where its finding
        says more than the meaning does (a flag without figures of its own is the meaning itself)."""
        found = public_verdict(self.verdict or {}).get("flag_details") or {}
        rows = []
        for name in self.flags or []:
            meaning, detail = describe(name), found.get(name, "")
            said = " ".join(detail.lower().rstrip(".").split())
            rows.append((name, meaning, "" if said and said in " ".join(meaning.lower().split()) else detail))
        return rows

    def measure_rows(self) -> list[dict]:
        """Every measure of the verdict, side by side, for the kernel page: one row per side."""
        timing = (self.verdict or {}).get("timing") or {}
        measures = timing.get("measures") or ({"latency": timing} if timing.get("candidate") else {})
        rows = []
        for key, measure in measures.items():
            if not measure or not measure.get("candidate"):
                continue
            headline = key == timing.get("headline", "latency")
            label = self.MEASURE_LABELS.get(key, key) + (" (headline)" if headline else "")
            # The headline's ratios are the verdict's stated ones: where a null result or no difference is
            # stated, the measure's own read otherwise (a 1.91x beside a 1.0 by construction), and the page
            # says what was measured where it says why.
            stated = timing if headline else measure
            sides = [("This kernel", measure["candidate"], None, None)]
            for name, measured in (measure.get("baselines") or {}).items():
                interval = (stated.get("speedup_intervals") or {}).get(name)
                sides.append((name, measured, (stated.get("speedups") or {}).get(name), interval))
            for index, (side, measured, speedup, interval) in enumerate(sides):
                rows.append(
                    {
                        "measure": label if index == 0 else "",
                        "what": measure.get("what", "") if index == 0 else "",
                        "side": side,
                        "median_ms": measured.get("median_ms"),
                        "iqr_ms": measured.get("iqr_ms"),
                        "samples": measured.get("samples"),
                        "speedup": speedup,
                        "interval": interval,
                        "shown": Speedup(speedup, interval) if speedup is not None else None,
                        "no_difference": Speedup(speedup, interval).difference == NO_DIFFERENCE,
                    }
                )
        return rows

    def apply_verdict(self, verdict: harness_verdict.Verdict, *, worker: str = "") -> None:
        """Take a harness verdict and copy out the figures the pages sort and filter on; the caller
        saves (verification.evaluations.record_verdict, which also tells the pages)."""
        if verdict.get("status") not in harness_verdict.STATUSES:
            raise ValueError(f"A verdict's status must be one of {harness_verdict.STATUSES}, not {verdict.get('status')!r}.")
        correctness = verdict.get("correctness") or {}
        timing = verdict.get("timing") or {}
        speedups = timing.get("speedups") or {}
        candidate_timing: Mapping[str, Any] = timing.get("candidate") or {}
        self.verdict = verdict
        self.status = verdict["status"]
        self.stage = self.Stage.DONE
        self.reason = without_paths(verdict.get("reason", ""))  # the verdict keeps it whole, for staff
        self.precision_tier = correctness.get("precision_tier", "") or ""
        self.max_abs_error = correctness.get("max_abs_error")
        self.max_rel_error = correctness.get("max_rel_error")
        self.candidate_ms = candidate_timing.get("median_ms")
        self.speedup_eager = speedups.get("eager")
        self.speedup_compile = speedups.get("compile")
        self.speedup_compile_ro = speedups.get("compile-ro")
        self.speedup_cudagraph = speedups.get("cudagraph")
        self.flags = list(verdict.get("flags") or [])
        self.env = verdict.get("env") or {}
        self.log_excerpt = verdict.get("log_excerpt", "") or ""
        if worker:
            self.worker = worker
        self.finished_at = timezone.now()
