from django.apps import AppConfig


class JobRowsConfig(AppConfig):
    """A row that records the one job message allowed to run it: the columns evaluations, proof
    checks and runs share, their sends and claims, and the reconciler. No tables of its own."""

    name = "jobrows"
    verbose_name = "Job rows"
