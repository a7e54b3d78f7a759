"""manage.py catch_up ARCH: evaluate on ARCH every listed candidate it has not evaluated yet."""

from django.core.management.base import BaseCommand, CommandError

from verification.fanout import catch_up
from verification.models import GpuWorker


class Command(BaseCommand):
    help = "Enqueue, on the bulk queue of ARCH, every listed candidate without an evaluation there."

    def add_arguments(self, parser):
        parser.add_argument("arch")
        parser.add_argument("--even-if-offline", action="store_true", help="Enqueue although no worker is live")

    def handle(self, *args, arch, even_if_offline, **options):
        if not even_if_offline and arch not in GpuWorker.objects.live_architectures():
            raise CommandError(
                f"No live worker for {arch!r}: start one first (manage.py verification_worker), or pass --even-if-offline "
                f"to queue the jobs for when it comes."
            )
        evaluations = catch_up(arch)
        self.stdout.write(f"{len(evaluations)} evaluations enqueued on {arch}.")
