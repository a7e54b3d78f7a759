"""The columns of a row that records the one job message allowed to run it, shared by evaluations,
proof checks and runs (court.models): abstract, so each table keeps its own columns, under the names
and definitions they had before.

The message is recorded on the row before the row commits and sent after (jobrows.messages); a
message that is not the row's does nothing; the reconciler (jobrows.reconciler) sends a new one
where the broker lost it.
"""

from django.db import models


class JobRow(models.Model):
    # The one job message that may run it: a message that is not this one (a duplicate, or one
    # replaced after the broker lost it) does nothing.
    message_id = models.CharField(max_length=64, blank=True)
    # When that message was made: the reconciler leaves a row sent less than its grace ago alone.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    # Jobs started on it: past its owner's most, a row is ended with a reason, not started again.
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class JobRowWithQueue(JobRow):
    """A job row sent to a queue of its own (one per architecture) and run by a registered worker,
    whose name and start the reconciler reads to tell a job under way from one lost."""

    queue = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=200, blank=True, help_text="Staff only: the worker that ran it")

    class Meta:
        abstract = True
