"""Workers: the processes that run the harness, one per GPU, registered by architecture."""

from django.db import models
from django.utils import timezone

from jobrows import liveness


class GpuWorkerQuerySet(models.QuerySet):
    def live(self, *, now=None):
        return self.filter(last_heartbeat__gte=(now or timezone.now()) - liveness.silence(), stopped_at__isnull=True)

    def live_architectures(self) -> list[str]:
        return sorted(set(self.live().values_list("arch", flat=True)))


class GpuWorker(models.Model):
    name = models.CharField(max_length=200, unique=True, help_text="host:device, unique per worker process slot")
    arch = models.CharField(max_length=32, db_index=True, help_text="Architecture key: h100, a100, l40, cpu, ...")
    device_name = models.CharField(max_length=200, help_text="As the driver names it, e.g. NVIDIA H100 80GB HBM3")
    host = models.CharField(max_length=200)
    capabilities = models.JSONField(default=dict, blank=True, help_text="Compute capability, memory, driver, CUDA, torch, triton")
    queues = models.JSONField(default=list, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    last_heartbeat = models.DateTimeField(default=timezone.now, db_index=True)
    stopped_at = models.DateTimeField(null=True, blank=True, help_text="Set when the worker shut down cleanly")

    objects = GpuWorkerQuerySet.as_manager()

    class Meta:
        ordering = ["arch", "name"]

    def __str__(self):
        return f"{self.name} ({self.arch})"

    @property
    def is_live(self) -> bool:
        return self.stopped_at is None and self.last_heartbeat >= timezone.now() - liveness.silence()
