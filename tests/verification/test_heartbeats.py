"""A worker's row in the registry, kept true while the worker runs."""

import pytest

from verification.devices import Device
from verification.heartbeats import WorkerRegistration
from verification.models import GpuWorker

pytestmark = pytest.mark.django_db


def test_a_worker_whose_row_was_deleted_registers_again_on_its_next_beat():
    registration = WorkerRegistration(Device(arch="h100", name="NVIDIA H100", torch_device="cuda"), queues=["gpu.h100"], slot="0")
    registration.register()
    GpuWorker.objects.all().delete()
    registration.beat()
    worker = GpuWorker.objects.get()
    assert (worker.name, worker.arch, worker.queues, worker.stopped_at) == (registration.name, "h100", ["gpu.h100"], None)


def test_a_beat_after_a_stop_marks_the_worker_alive_again():
    registration = WorkerRegistration(Device(arch="a100", name="NVIDIA A100", torch_device="cuda"), queues=["gpu.a100"], slot="1")
    registration.register()
    GpuWorker.objects.update(stopped_at="2026-01-01T00:00:00Z")
    before = GpuWorker.objects.get().last_heartbeat
    registration.beat()
    worker = GpuWorker.objects.get()
    assert worker.stopped_at is None and worker.last_heartbeat > before
