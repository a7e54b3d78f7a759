from django.apps import AppConfig
from django.db.models.signals import post_save


class VerificationConfig(AppConfig):
    """The jobs app: verifications and proof checks queued per architecture, the workers that run them."""

    name = "verification"
    # The label the app had when it shared the harness's package: its tables and migration history
    # keep that name, so existing databases need no migration for the move.
    label = "evaluation"
    verbose_name = "Verification workers"

    def ready(self):
        from kernels.models import Candidate
        from kernels.signals import proof_check_requested, reverification_requested
        from verification.fanout import candidate_saved, reverification_requested_for
        from verification.proofs import proof_requested

        # The kernels app may not import this one, so its requests for work arrive by signal.
        post_save.connect(candidate_saved, sender=Candidate, dispatch_uid="verification.fanout")
        reverification_requested.connect(reverification_requested_for, dispatch_uid="verification.reverify")
        proof_check_requested.connect(proof_requested, dispatch_uid="verification.proofs")
