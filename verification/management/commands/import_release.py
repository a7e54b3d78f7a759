"""manage.py import_release PATH...: import measured releases (files, or folders of *.jsonl.gz)."""

from django.core.management.base import BaseCommand, CommandError

from evaluation.harness.release import ReleaseError
from verification.releases import ReleaseRefused, import_release, release_files


class Command(BaseCommand):
    help = (
        "Import measured releases (evaluation/harness/release.py): each verdict becomes an evaluation of the release's "
        "architecture, marked with the release. PATH is a release file or a folder of them; importing again changes "
        "nothing. Their problems must be imported first (import_problems)."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="PATH", help="a release (.jsonl.gz) or a folder of them")

    def handle(self, *args, paths, **options):
        files = release_files(paths)
        if not files:
            self.stdout.write(f"No release (*.jsonl.gz) in {', '.join(paths)}: nothing imported.")
            return
        for path in files:
            try:
                report = import_release(path)
            except (ReleaseError, ReleaseRefused) as exc:
                raise CommandError(str(exc)) from None
            for refusal in report.refusals:
                self.stderr.write(f"refused {refusal}")
            self.stdout.write(report.summary())
