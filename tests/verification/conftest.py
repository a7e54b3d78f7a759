"""Fixtures for the job path: registered workers (the broker and the in-process worker are in tests/conftest.py)."""

from django.utils import timezone

from verification.models import GpuWorker


def register(arch: str, *, age_seconds: float = 0) -> GpuWorker:
    return GpuWorker.objects.create(
        name=f"test-host:{arch}:0",
        arch=arch,
        device_name=f"test device {arch}",
        host="test-host",
        last_heartbeat=timezone.now() - timezone.timedelta(seconds=age_seconds),
    )
