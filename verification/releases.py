"""Importing a measured release (evaluation.harness.release): verdicts a GPU box measured, with their
provenance, become Evaluations here.

Each entry's problem is the platform's KernelBench task of that level and number, and must be the
very source that was measured (its sha256); its candidate is made the one way candidates are made
(court.services, origin "import", labelled with where it came from), with its publisher's claims
kept beside it; its verdict becomes the candidate's evaluation on the release's architecture under
the release's harness, marked with the release (verification.evaluations.record_imported_verdict).

A release from an older harness is imported as outdated: its evaluations keep their harness
version, so nothing that counts current verdicts (the leaderboard, the audit's figures) counts
them. A release from a newer harness than this platform's is refused. Importing a release again
changes nothing.
"""

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import cast

from django.db import transaction

from court.models import Problem, Release
from court.published_kernels import claims_of
from court.services import import_candidate
from court.source import source_hash
from evaluation.harness import HARNESS_VERSION
from evaluation.harness import release as harness_release
from evaluation.harness import verdict as harness_verdict
from verification import evaluations

logger = logging.getLogger(__name__)

REFUSED = "refused"


class ReleaseRefused(ValueError):
    """A whole release that cannot be imported; the message says what to do."""


@dataclass
class ImportReport:
    release: Release
    created: bool
    outcomes: Counter = field(default_factory=Counter)
    refusals: list[str] = field(default_factory=list)

    def summary(self) -> str:
        counts = ", ".join(f"{count} {outcome}" for outcome, count in sorted(self.outcomes.items()))
        outdated = (
            f" Outdated: measured by harness {self.release.harness_version}, this platform runs {HARNESS_VERSION}; its "
            "verdicts are kept and shown as outdated, never counted with current ones."
            if self.release.is_outdated
            else ""
        )
        return f"{self.release.name} ({self.release.arch}, {self.release.measured_on}): {counts}.{outdated}"


def _release_row(measured: harness_release.Release) -> tuple[Release, bool]:
    header = measured.header
    existing = Release.objects.filter(sha256=measured.sha256).first()
    if existing is not None:
        return existing, False
    named = Release.objects.filter(name=measured.name).first()
    if named is not None:
        raise ReleaseRefused(
            f"A release named {measured.name} was imported from another file (sha256 {named.sha256[:12]}…, this one "
            f"{measured.sha256[:12]}…): a release's file never changes; pack the new verdicts under a new name."
        )
    row = Release.objects.create(
        name=measured.name,
        arch=measured.arch,
        harness_version=measured.harness_version,
        harness_commit=header["harness"]["commit"],
        harness_dirty=header["harness"].get("dirty"),
        device=header["device"],
        env=header["env"],
        measured_from=datetime.fromisoformat(header["measured"]["from"]),
        measured_at=datetime.fromisoformat(header["measured"]["to"]),
        sha256=measured.sha256,
        header={key: value for key, value in header.items() if key not in ("format", "version")},
        entries=len(measured.entries),
    )
    return row, True


def _problem_of(entry: harness_release.Entry) -> Problem:
    """The platform's problem the entry was measured on; ValueError with what to do where there is none."""
    where = f"L{entry.level} T{entry.task} ({entry.key})"
    problem = Problem.objects.filter(origin=Problem.Origin.KERNELBENCH, level=entry.level, task=entry.task).first()
    if problem is None:
        raise ValueError(
            f"{where}: this platform has no KernelBench level {entry.level} task {entry.task}: import the problems first "
            "(manage.py import_problems FILE, e.g. the release's source file)."
        )
    here = source_hash(problem.source)
    if here != entry.problem_sha256:
        raise ValueError(
            f"{where}: the release measured another source of this problem (sha256 {entry.problem_sha256[:12]}…) than this "
            f"platform's {problem.label} (sha256 {here[:12]}…): import the problems it was measured on, or measure it again."
        )
    return problem


def _import_entry(row: Release, entry: harness_release.Entry) -> str:
    problem = _problem_of(entry)
    claims = entry.claims
    candidate, _ = import_candidate(
        problem=problem,
        code=entry.source,
        origin_label=entry.origin,
        arch=claims["arch"] if claims else None,
        claims=claims_of(claims["scores"]) if claims else None,
        claimed_by=claims["by"] if claims else "",
    )
    outcome, _ = evaluations.record_imported_verdict(
        candidate=candidate,
        release=row,
        verdict=cast(harness_verdict.Verdict, entry.verdict),
        measured_at=datetime.fromisoformat(entry.measured_at),
    )
    return outcome


def import_release(path: str | Path) -> ImportReport:
    """Import the release at `path`: harness_release.ReleaseError for a file that cannot be read,
    ReleaseRefused for one this platform must not take; an entry that cannot be imported is
    refused alone, and its reason is in the report."""
    measured = harness_release.read(path)
    if measured.harness_version != HARNESS_VERSION and not harness_release.is_older_harness(measured.harness_version):
        raise ReleaseRefused(
            f"{path}: measured by harness {measured.harness_version}, newer than this platform's ({HARNESS_VERSION}): "
            "update the platform before importing it."
        )
    with transaction.atomic():
        row, created = _release_row(measured)
    report = ImportReport(release=row, created=created)
    for entry in measured.entries:
        try:
            with transaction.atomic():
                report.outcomes[_import_entry(row, entry)] += 1
        except ValueError as exc:
            report.outcomes[REFUSED] += 1
            report.refusals.append(str(exc))
    logger.info("release %s imported from %s: %s", row.name, path, dict(report.outcomes))
    return report


def release_files(paths: list[str]) -> list[Path]:
    """The files named, and the releases (*.jsonl.gz) in the folders named, in name order."""
    found = []
    for name in paths:
        path = Path(name)
        found += sorted(path.glob("*.jsonl.gz")) if path.is_dir() else [path]
    return found
