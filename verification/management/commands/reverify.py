"""manage.py reverify [--arch A] [--dry-run]: after a harness change, evaluate listed kernels again."""

from django.core.management.base import BaseCommand, CommandError

from evaluation.harness import HARNESS_VERSION
from verification.models import GpuWorker
from verification.reverify import broker_is_in_process, reverify_outdated


class Command(BaseCommand):
    help = (
        f"Enqueue, on each architecture's bulk queue, every listed kernel verified there under an older harness "
        f"and not yet evaluated under harness {HARNESS_VERSION}."
    )

    def add_arguments(self, parser):
        parser.add_argument("--arch", help="Only this architecture, e.g. h100")
        parser.add_argument("--dry-run", action="store_true", help="List the kernels; enqueue nothing")

    def handle(self, *args, arch, dry_run, **options):
        if not dry_run and broker_is_in_process():
            raise CommandError(
                "The job broker is in-process (embedded mode, no REDIS_URL): jobs enqueued by this command would be "
                'lost. Use the admin\'s action "Re-verify selected kernels lacking a verdict of the current harness" '
                "on the running site, or set REDIS_URL as the workers have it."
            )
        plan = reverify_outdated(arch=arch, dry_run=dry_run)
        if not plan:
            where = f" on {arch}" if arch else ""
            self.stdout.write(f"No listed kernel lacks an evaluation of harness {HARNESS_VERSION}{where}: nothing to enqueue.")
            return
        live = GpuWorker.objects.live_architectures()
        for where, kernels in plan.items():
            ids = ", ".join(f"#{kernel.pk}" for kernel in kernels)
            waiting = "" if where in live else f"; no live {where} worker: the jobs wait for one"
            verb = "would be enqueued" if dry_run else "enqueued"
            self.stdout.write(f"{where}: {len(kernels)} kernels {verb} ({ids}){waiting}.")
