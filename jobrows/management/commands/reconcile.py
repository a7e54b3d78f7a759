"""manage.py reconcile [--every SECONDS]: resume or end the job rows (runs, evaluations, proof
checks: whatever kinds the apps registered, jobrows.reconciler) no job will finish."""

from django.core.management.base import BaseCommand

from jobrows.reconciler import kinds, reconcile, reconcile_forever


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
            *most, last = [kind[:-1] for kind in kinds()] or ["row"]
            every_kind = f"{', '.join(most)} and {last}" if most else last
            self.stdout.write(f"Nothing to reconcile: every pending {every_kind} has a job.")
