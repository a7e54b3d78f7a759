"""Fixtures for the job path: registered workers, and an in-process Dramatiq worker."""

import dramatiq
import pytest
from django.utils import timezone

from evaluation import registry
from evaluation.devices import Device
from evaluation.models import GpuWorker
from evaluation.queues import queues_of


def register(arch: str, *, age_seconds: float = 0) -> GpuWorker:
    return GpuWorker.objects.create(
        name=f"test-host:{arch}:0",
        arch=arch,
        device_name=f"test device {arch}",
        host="test-host",
        last_heartbeat=timezone.now() - timezone.timedelta(seconds=age_seconds),
    )


@pytest.fixture
def broker():
    """The configured broker (Redis in CI, in-process elsewhere), emptied around the test."""
    broker = dramatiq.get_broker()
    broker.flush_all()
    yield broker
    broker.flush_all()


@pytest.fixture
def cpu_worker(transactional_db, broker):
    """This process as the `cpu` worker, consuming its queues in a thread, as embedded mode does."""
    import evaluation.actors  # noqa: F401  (registers the actors on the broker)

    device = Device(arch="cpu", name="test cpu", torch_device="cpu")
    queues = queues_of("cpu")
    for queue in queues:
        broker.declare_queue(queue)
    registration = registry.start_registration(device, queues=queues, slot="pytest")
    worker = dramatiq.Worker(broker, queues=set(queues), worker_threads=1, worker_timeout=100)
    worker.start()
    yield registration
    worker.stop()
    registration.stop()
    registry._current = None
