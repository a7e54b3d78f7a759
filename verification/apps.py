from django.apps import AppConfig


class VerificationConfig(AppConfig):
    """The jobs app: verifications and proof checks queued per architecture, the workers that run them."""

    name = "verification"
    # The label the app had when it shared the harness's package: its tables and migration history
    # keep that name, so existing databases need no migration for the move.
    label = "evaluation"
    verbose_name = "Verification workers"

    def ready(self):
        from court import signals
        from jobrows import reconciler
        from verification import receivers
        from verification.reconciler import reconcile_evaluations, reconcile_proof_checks

        signals.candidate_created.connect(receivers.candidate_created, dispatch_uid="verification.candidate_created")
        signals.reverification_requested.connect(
            receivers.reverification_requested, dispatch_uid="verification.reverification_requested"
        )
        signals.proof_check_requested.connect(receivers.proof_check_requested, dispatch_uid="verification.proof_check")
        reconciler.register("evaluations", reconcile_evaluations)
        reconciler.register("proof checks", reconcile_proof_checks)
