"""A run's transcript: every event of a run, in order, so a reload replays it and continues live.

Each event is written before it is published, so a page that joins the run's group and then
reads the stored events misses nothing: what it did not read, it receives live.
"""

from django.db import models


class RunEvent(models.Model):
    class Kind(models.TextChoices):
        STATUS = "status", "Run status"
        PROMPT = "prompt", "Prompt sent"
        REASONING = "reasoning", "Reasoning delta"
        ANSWER = "answer", "Answer delta"
        FINISHED = "finished", "Model finished"
        CANDIDATE = "candidate", "Candidate extracted"
        NO_CANDIDATE = "no_candidate", "No candidate found"
        VERDICTS = "verdicts", "Round verdicts"
        ERROR = "error", "Error"

    run = models.ForeignKey("kernels.OptimizationRun", on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    round = models.PositiveSmallIntegerField(default=0)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    text = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runevent_unique_seq_per_run")]

    def __str__(self):
        return f"run {self.run_id} #{self.seq} {self.kind}"

    def as_message(self) -> dict:
        """The event as the browser receives it, live or replayed."""
        return {"kind": self.kind, "seq": self.seq, "round": self.round, "text": self.text, "data": self.data}
