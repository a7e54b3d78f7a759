"""The admin of a job row: its job's columns after the row's own, where they stood before the
columns moved to the abstract base (whose fields Django lists first)."""

from jobrows.models import JobRowWithQueue

JOB_COLUMNS = {field.name for field in JobRowWithQueue._meta.get_fields()}


class JobRowAdmin:
    """Mixed into a ModelAdmin of a job row (court.admin): the form's own fields first, then the
    job's, then the read-only ones, each in the model's order."""

    def get_fields(self, request, obj=None):
        fields = list(super().get_fields(request, obj))
        readonly = set(self.get_readonly_fields(request, obj))
        editable = [name for name in fields if name not in readonly]
        return (
            [name for name in editable if name not in JOB_COLUMNS]
            + [name for name in editable if name in JOB_COLUMNS]
            + [name for name in fields if name in readonly]
        )
