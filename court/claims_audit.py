"""The audit of published kernels: every entry a publisher released (CUDA-L1's, per GPU file) beside
what our harness measured of it on one architecture, and a summary of what held.

Claims and measurements stay apart: a row's `claim` is the publisher's numbers, its `measures` ours,
each labelled as what it is, and no figure of one ever stands in for the other. Only current
verdicts count (court.models.visibility's `current`), a live worker's or a measured release's:
an outdated release is listed with its provenance, never counted. Kernels and problems staff hid
are left out; kernels delisted for a confirmed hack stay, since finding them is what the audit is for.

A verified kernel's headline speedup over eager (the steady state) is held to the published one
with its 95% interval: it **beats the claim** where the whole interval lies above the published
speedup, is **not reproduced** where the whole interval lies below 80% of it, and is reproduced
within 20% otherwise (kernels without an interval, from an older harness, by the figure alone).
"""

from collections import Counter
from dataclasses import dataclass, field

from django.db.models import Prefetch, Q

from court import check_meanings, flag_meanings
from court.models import Candidate, Claim, Evaluation, Release
from evaluation.harness import verdict as harness_verdict
from evaluation.harness.static_analysis import KINDS

REPRODUCED_WITHIN = 0.2
# The audit every page links to; another publisher's opens once its claims are imported.
DEFAULT_SOURCE = "cuda-l1"
BEATS_CLAIM, REPRODUCED, NOT_REPRODUCED = "beats the claim", "reproduced within 20%", "not reproduced"
NOT_MEASURED, ERRORS = "not measured", "errors"
ERROR_STATUSES = (harness_verdict.ERROR, harness_verdict.TIMEOUT, harness_verdict.CRASHED)
MEASURES = {"steady_state": "Steady state", "device_time": "Device time", "latency": "Latency"}
CLAIM_FIELDS = ("speedup_eager", "speedup_compile", "speedup_compile_ro", "speedup_cudagraph", "speedup_cudnn")

# What `?show=` may select, as the summary's links name them.
CATEGORIES = (
    harness_verdict.VERIFIED,
    harness_verdict.REJECTED,
    harness_verdict.INCORRECT,
    ERRORS,
    NOT_MEASURED,
    NOT_REPRODUCED,
    REPRODUCED,
    BEATS_CLAIM,
)


def reproduction(speedup: float | None, interval, claimed: float | None) -> str | None:
    """What a verified kernel's measured speedup says of the published one (the module's docstring)."""
    if speedup is None or not claimed:
        return None
    low, high = interval if isinstance(interval, (list, tuple)) and None not in interval else (speedup, speedup)
    if low > claimed:
        return BEATS_CLAIM
    if high < (1 - REPRODUCED_WITHIN) * claimed:
        return NOT_REPRODUCED
    return REPRODUCED


@dataclass(frozen=True)
class Measure:
    """One of our timing measures, over eager, with its 95% interval."""

    name: str
    label: str
    speedup: float | None
    interval: list | None
    candidate_ms: float | None


@dataclass
class AuditRow:
    candidate: Candidate
    claim: Claim | None
    evaluation: Evaluation | None

    @property
    def problem(self):
        return self.candidate.problem

    @property
    def status(self) -> str:
        """verified, rejected, incorrect, error, timeout, crashed; or not measured (no verdict of the
        current harness here: none, pending, or failed on our side)."""
        evaluation = self.evaluation
        if evaluation is None or evaluation.status not in harness_verdict.STATUSES:
            return NOT_MEASURED
        return evaluation.status

    @property
    def kind(self) -> str:
        """What kind of optimization the entry is (Candidate.kind): how many published kernels hold no kernel."""
        return self.candidate.kind

    @property
    def kind_label(self) -> str:
        return KINDS.get(self.kind, "")

    @property
    def deciding_check(self) -> str | None:
        if self.evaluation is None:
            return None
        return next((c.get("name") for c in (self.evaluation.verdict or {}).get("checks") or [] if not c.get("passed")), None)

    @property
    def family(self) -> str | None:
        return check_meanings.family(self.deciding_check)

    @property
    def check_meaning(self) -> str:
        return check_meanings.describe(self.deciding_check)

    @property
    def flags(self) -> list[tuple[str, str]]:
        return [(name, flag_meanings.describe(name)) for name in (self.evaluation.flags if self.evaluation else [])]

    @property
    def measures(self) -> list[Measure]:
        """Our measures over eager where the verdict has them (device time on CUDA only)."""
        evaluation = self.evaluation
        if self.status != harness_verdict.VERIFIED or evaluation is None:  # a verified status has its evaluation
            return []
        timing = evaluation.verdict.get("timing") or {}
        found = []
        for name, label in MEASURES.items():
            measure = (timing.get("measures") or {}).get(name) or {}
            speedup = (measure.get("speedups") or {}).get("eager")
            if speedup is not None:
                interval = (measure.get("speedup_intervals") or {}).get("eager")
                found.append(Measure(name, label, speedup, interval, (measure.get("candidate") or {}).get("median_ms")))
        return found

    @property
    def by_measure(self) -> dict[str, Measure]:
        return {measure.name: measure for measure in self.measures}

    @property
    def speedup(self) -> float | None:
        """Our headline speedup over eager (the steady state where measured), verified kernels only."""
        evaluation = self.evaluation
        return evaluation.speedup_eager if evaluation is not None and self.status == harness_verdict.VERIFIED else None

    @property
    def interval(self):
        return self.evaluation.speedup_interval("eager") if self.speedup is not None else None

    @property
    def claimed(self) -> float | None:
        return self.claim.speedup_eager if self.claim else None

    @property
    def reproduction(self) -> str | None:
        return reproduction(self.speedup, self.interval, self.claimed)

    @property
    def ratio(self) -> float | None:
        return self.speedup / self.claimed if self.speedup is not None and self.claimed else None

    @property
    def url(self) -> str:
        """The kernel page, at this verdict where there is one: the proof of the row's figures."""
        anchor = f"#verdict-{self.evaluation.pk}" if self.evaluation else ""
        return self.candidate.get_absolute_url() + anchor

    @property
    def categories(self) -> set[str]:
        shown = {self.status, f"check:{self.deciding_check}"}
        if self.status in ERROR_STATUSES:
            shown.add(ERRORS)
        if self.reproduction:
            shown.add(self.reproduction)
        return shown


@dataclass
class Summary:
    entries: int
    counts: Counter = field(default_factory=Counter)
    rejected_by: list[tuple[str | None, str | None, int]] = field(default_factory=list)  # (check, family, kernels)
    kinds: list[tuple[str, str, int, int]] = field(default_factory=list)  # (kind, meaning, entries, verified)

    def count(self, category: str) -> int:
        return self.counts[category]

    def glance(self) -> list[dict]:
        """The figures a reader takes in first, each with the `?show=` that lists its kernels."""
        return [
            {"show": show, "count": self.count(show), "label": label}
            for show, label in (
                (harness_verdict.VERIFIED, "verified"),
                (harness_verdict.REJECTED, "rejected (an integrity check)"),
                (harness_verdict.INCORRECT, "incorrect"),
                (ERRORS, "errors, timeouts and crashes"),
                (NOT_MEASURED, "not measured by the current harness"),
                (NOT_REPRODUCED, "verified, but below 80% of the claim"),
                (REPRODUCED, "verified, reproduced within 20%"),
                (BEATS_CLAIM, "verified, faster than claimed"),
            )
        ]


def summarize(rows: list[AuditRow]) -> Summary:
    summary = Summary(entries=len(rows))
    for row in rows:
        summary.counts.update(category for category in row.categories if not category.startswith("check:"))
    summary.counts["measured"] = summary.entries - summary.counts[NOT_MEASURED]
    rejected = Counter(row.deciding_check for row in rows if row.status == harness_verdict.REJECTED)
    summary.rejected_by = [(check, check_meanings.family(check), count) for check, count in rejected.most_common()]
    kinds = Counter(row.kind for row in rows)
    verified = Counter(row.kind for row in rows if row.status == harness_verdict.VERIFIED)
    summary.kinds = [(kind, KINDS.get(kind, "not classified"), count, verified[kind]) for kind, count in kinds.most_common()]
    return summary


@dataclass
class Audit:
    source: str
    arch: str
    rows: list[AuditRow]
    summary: Summary
    releases: list[Release]

    @property
    def flag_meanings(self) -> list[tuple[str, str]]:
        """Every flag raised on this tab, with what it means."""
        return sorted({flag for row in self.rows for flag in row.flags})

    def shown(self, category: str | None, kind: str = "") -> list[AuditRow]:
        rows = [row for row in self.rows if category in row.categories] if category else self.rows
        return [row for row in rows if row.kind == kind] if kind else rows

    def chart(self) -> dict:
        """Ours against published, verified kernels with a claim: one point each, linking to its kernel."""
        points = [
            {
                "x": row.claimed,
                "y": row.speedup,
                "interval": row.interval,
                "label": f"{row.problem.label} #{row.candidate.pk}",
                "url": row.url,
                "reproduction": row.reproduction,
            }
            for row in self.rows
            if row.reproduction
        ]
        return {"points": points, "within": 1 - REPRODUCED_WITHIN}


def claimed_candidates(source: str):
    """Every public candidate with a claim by `source`: the entries it published."""
    return Candidate.objects.public().filter(claims__source=source).distinct()


def is_source(source: str) -> bool:
    return source == DEFAULT_SOURCE or Claim.objects.filter(source=source).exists()


def audit_archs(source: str) -> list[str]:
    """Architectures where any of `source`'s entries has a verdict of the current harness."""
    evaluations = Evaluation.objects.current().filter(
        candidate__in=claimed_candidates(source), status__in=harness_verdict.STATUSES
    )
    return sorted(set(evaluations.values_list("arch", flat=True)))


def audit(source: str, arch: str) -> Audit:
    """The published entries of `source` on `arch`: those it claimed there, and those we measured there."""
    current_here = Evaluation.objects.current().filter(arch=arch).select_related("release")
    candidates = (
        claimed_candidates(source)
        .filter(Q(claims__arch=arch) | Q(evaluations__in=current_here))
        .distinct()
        .select_related("problem")
        .prefetch_related(
            Prefetch("claims", queryset=Claim.objects.filter(source=source), to_attr="published"),
            Prefetch("evaluations", queryset=current_here, to_attr="here"),
        )
    )
    rows = []
    for candidate in candidates:
        # The claim made on this architecture, else the one made elsewhere (its arch is shown beside it).
        claim = next((c for c in candidate.published if c.arch == arch), candidate.published[0] if candidate.published else None)
        rows.append(AuditRow(candidate=candidate, claim=claim, evaluation=candidate.here[0] if candidate.here else None))
    rows.sort(key=lambda row: (row.problem.level or 99, row.problem.task or 0, row.candidate.pk))
    return Audit(
        source=source,
        arch=arch,
        rows=rows,
        summary=summarize(rows),
        releases=list(Release.objects.filter(arch=arch)),
    )


# -- as data: the API's JSON and CSV -------------------------------------------------------------


def row_data(row: AuditRow, *, site_url: str = "") -> dict:
    """One row as the API gives it: the claim and our measurement in separate objects."""
    evaluation = row.evaluation
    return {
        "level": row.problem.level,
        "task": row.problem.task,
        "problem_url": f"{site_url}{row.problem.get_absolute_url()}",
        "kernel_id": row.candidate.pk,
        "kernel_url": f"{site_url}{row.url}",
        "kind": row.kind,
        "claim": {"by": row.claim.source, "arch": row.claim.arch, **{f: getattr(row.claim, f) for f in CLAIM_FIELDS}}
        if row.claim
        else None,
        "measured": {
            "status": row.status,
            "deciding_check": row.deciding_check,
            "family": row.family,
            "reason": evaluation.reason if evaluation else "",
            "flags": [{"name": name, "meaning": meaning} for name, meaning in row.flags],
            "harness_version": evaluation.harness_version if evaluation else None,
            "release": evaluation.release.name if evaluation and evaluation.release else None,
            "speedup_eager": row.speedup,
            "speedup_eager_interval": row.interval,
            "measures": {
                m.name: {"speedup_eager": m.speedup, "interval": m.interval, "candidate_ms": m.candidate_ms} for m in row.measures
            },
        },
        "reproduction": row.reproduction,
        "ratio_to_claim": row.ratio,
    }


def summary_data(summary: Summary) -> dict:
    return {
        "entries": summary.entries,
        "measured": summary.count("measured"),
        "verified": summary.count(harness_verdict.VERIFIED),
        "rejected": summary.count(harness_verdict.REJECTED),
        "rejected_by": [{"check": check, "family": family, "kernels": count} for check, family, count in summary.rejected_by],
        "incorrect": summary.count(harness_verdict.INCORRECT),
        "errors": summary.count(ERRORS),
        "not_measured": summary.count(NOT_MEASURED),
        "not_reproduced": summary.count(NOT_REPRODUCED),
        "reproduced": summary.count(REPRODUCED),
        "beats_claim": summary.count(BEATS_CLAIM),
        "kinds": [{"kind": kind, "meaning": meaning, "entries": n, "verified": v} for kind, meaning, n, v in summary.kinds],
    }


def release_data(release: Release) -> dict:
    return {
        "name": release.name,
        "arch": release.arch,
        "harness_version": release.harness_version,
        "harness_commit": release.harness_commit,
        "outdated": release.is_outdated,
        "env": release.env,
        "measured_from": release.measured_from.isoformat(),
        "measured_at": release.measured_at.isoformat(),
        "sha256": release.sha256,
        "sources": release.sources,
        "entries": release.entries,
    }


CSV_COLUMNS = (
    "level",
    "task",
    "kernel_id",
    "kernel_url",
    "claim_by",
    "claim_arch",
    "claim_speedup_eager",
    "claim_speedup_compile",
    "measured_status",
    "measured_deciding_check",
    "measured_family",
    "measured_flags",
    "measured_release",
    "measured_speedup_eager",
    "measured_speedup_eager_low",
    "measured_speedup_eager_high",
    "measured_device_time_speedup_eager",
    "measured_latency_speedup_eager",
    "reproduction",
)


def csv_row(data: dict) -> list:
    """A row_data as the CSV's columns: claims prefixed claim_, our figures measured_."""
    claim, measured = data["claim"] or {}, data["measured"]
    interval = measured["speedup_eager_interval"] or [None, None]
    measures = measured["measures"]
    return [
        data["level"],
        data["task"],
        data["kernel_id"],
        data["kernel_url"],
        claim.get("by"),
        claim.get("arch"),
        claim.get("speedup_eager"),
        claim.get("speedup_compile"),
        measured["status"],
        measured["deciding_check"],
        measured["family"],
        " ".join(flag["name"] for flag in measured["flags"]),
        measured["release"],
        measured["speedup_eager"],
        interval[0],
        interval[1],
        (measures.get("device_time") or {}).get("speedup_eager"),
        (measures.get("latency") or {}).get("speedup_eager"),
        data["reproduction"],
    ]
