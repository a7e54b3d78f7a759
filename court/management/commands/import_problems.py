"""manage.py import_problems FILE: load KernelBench problems from a CUDA-L1 style release file."""

from collections import Counter

from django.core.management.base import BaseCommand, CommandError

from court.published_kernels import ReleaseError, read_release
from court.services import import_kernelbench_problem
from court.validation import SourceError


class Command(BaseCommand):
    help = "Create (or update) the KernelBench problems of a CUDA-L1 style .jsonl[.gz] file. Idempotent."

    def add_arguments(self, parser):
        parser.add_argument("file", help="e.g. data/cuda-l1/h100.jsonl.gz")

    def handle(self, *args, file, **options):
        try:
            entries = read_release(file)
        except ReleaseError as exc:
            raise CommandError(str(exc)) from None
        outcomes = Counter()
        per_level = Counter()
        for entry in entries:
            try:
                _, outcome = import_kernelbench_problem(level=entry.level, task=entry.task, source=entry.ref_code)
            except SourceError as exc:
                outcomes["invalid"] += 1
                self.stderr.write(f"line {entry.line} (level {entry.level} task {entry.task}): {exc}")
                continue
            outcomes[outcome] += 1
            per_level[entry.level] += 1
        levels = ", ".join(f"level {level}: {count}" for level, count in sorted(per_level.items()))
        self.stdout.write(
            f"{len(entries)} problems read ({levels}): {outcomes['created']} created, "
            f"{outcomes['updated']} updated, {outcomes['unchanged']} unchanged, {outcomes['invalid']} invalid."
        )
        if outcomes["invalid"]:
            raise CommandError(f"{outcomes['invalid']} problems were invalid; see the lines above.")
