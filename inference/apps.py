from django.apps import AppConfig


class InferenceConfig(AppConfig):
    name = "inference"
    verbose_name = "Inference"

    def ready(self):
        from inference.runs import reconcile_runs
        from jobrows import reconciler

        reconciler.register("runs", reconcile_runs)
