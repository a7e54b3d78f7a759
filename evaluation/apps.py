from django.apps import AppConfig
from django.db.models.signals import post_save


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation workers"

    def ready(self):
        from evaluation.fanout import candidate_saved, reverification_requested_for
        from evaluation.proofs import proof_requested
        from kernels.models import Candidate
        from kernels.signals import proof_check_requested, reverification_requested

        # The kernels app may not import this one, so its requests for work arrive by signal.
        post_save.connect(candidate_saved, sender=Candidate, dispatch_uid="evaluation.fanout")
        reverification_requested.connect(reverification_requested_for, dispatch_uid="evaluation.reverify")
        proof_check_requested.connect(proof_requested, dispatch_uid="evaluation.proofs")
