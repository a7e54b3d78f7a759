"""manage.py import_candidates FILE --arch ARCH --origin LABEL: import published kernels, unverified."""

import re
from collections import Counter

from django.core.management.base import BaseCommand, CommandError

from court.published_kernels import ReleaseError, read_release
from court.services import import_candidate, import_kernelbench_problem
from court.validation import SourceError


class Command(BaseCommand):
    help = (
        "Import the candidates of a CUDA-L1 style .jsonl[.gz] file as unverified candidates, keeping the "
        "published speedups as claims for --arch. Their problems are imported too. Idempotent."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--arch", required=True, help="Architecture the claims were measured on, e.g. h100")
        parser.add_argument("--origin", required=True, help="Who published them, e.g. cuda-l1")

    def handle(self, *args, file, arch, origin, **options):
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,31}", arch):
            raise CommandError(f"--arch {arch!r}: use a short lower-case key such as h100, a100, l40.")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", origin):
            raise CommandError(f"--origin {origin!r}: use a short label such as cuda-l1.")
        try:
            entries = read_release(file)
        except ReleaseError as exc:
            raise CommandError(str(exc)) from None
        outcomes = Counter()
        for entry in entries:
            if entry.custom_code is None:
                outcomes["skipped"] += 1
                self.stdout.write(f"skipped level {entry.level} task {entry.task}: no candidate in the file")
                continue
            try:
                problem, _ = import_kernelbench_problem(level=entry.level, task=entry.task, source=entry.ref_code)
            except SourceError as exc:
                outcomes["invalid"] += 1
                self.stderr.write(f"line {entry.line}: the problem is invalid: {exc}")
                continue
            _, created = import_candidate(
                problem=problem, code=entry.custom_code, origin_label=origin, arch=arch, claims=entry.claims
            )
            outcomes["imported" if created else "unchanged"] += 1
        self.stdout.write(
            f"{len(entries)} entries read: {outcomes['imported']} candidates imported, {outcomes['unchanged']} "
            f"already present, {outcomes['skipped']} skipped (no candidate), {outcomes['invalid']} invalid problems."
        )
