"""manage.py reconcile [--every SECONDS]: resume or end the runs and evaluations no job will finish."""

from django.core.management.base import BaseCommand

from inference.reconciler import reconcile, reconcile_forever


class Command(BaseCommand):
    help = (
        "Send again the jobs the broker lost (queued or running rows nothing will run) and end, with a "
        "reason, those that failed too often. Once, or every SECONDS with --every (a supervised process)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--every", type=float, default=None, help="Run a pass every this many seconds, until stopped")

    def handle(self, *args, every, **options):
        if every is not None:
            self.stdout.write(f"reconciling every {every:g} s")
            reconcile_forever(every)
            return
        done = reconcile()
        for kind, actions in done.items():
            for pk, action in sorted(actions.items()):
                self.stdout.write(f"{kind[:-1]} {pk}: {action}")
        if not any(done.values()):
            self.stdout.write("Nothing to reconcile: every pending run, evaluation and proof check has a job.")
