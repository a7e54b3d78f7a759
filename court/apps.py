from django.apps import AppConfig


class CourtConfig(AppConfig):
    """The domain: problems, candidates and their evaluations, runs, reports, curation, the leaderboard."""

    name = "court"
    # The label the app had when the package was called `kernels`: its tables, migration history and
    # admin URLs keep that name, so existing databases need no migration for the move.
    label = "kernels"
    verbose_name = "Kernel Court"
