"""Registering a worker process and keeping its heartbeat fresh while it runs.

Fan-out sends work only to architectures with a live worker, so a worker that stops beating
(killed, hung, network gone) stops receiving jobs within `liveness.silence()`.
"""

import logging
import os
import threading

from django.db import OperationalError, close_old_connections
from django.utils import timezone

from jobrows import liveness
from verification.devices import Device
from verification.models import GpuWorker

logger = logging.getLogger(__name__)


class WorkerRegistration:
    """One worker process's row in the registry, with a heartbeat thread."""

    def __init__(self, device: Device, *, queues: list[str], slot: str = ""):
        self.device = device
        self.queues = queues
        slot = slot or os.environ.get("CUDA_VISIBLE_DEVICES") or str(os.getpid())
        self.name = f"{device.host}:{device.arch}:{slot}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def register(self) -> GpuWorker:
        now = timezone.now()
        worker, _ = GpuWorker.objects.update_or_create(
            name=self.name,
            defaults={
                "arch": self.device.arch,
                "device_name": self.device.name,
                "host": self.device.host,
                "capabilities": self.device.capabilities,
                "queues": self.queues,
                "started_at": now,
                "last_heartbeat": now,
                "stopped_at": None,
            },
        )
        return worker

    def beat(self) -> None:
        """Fresh heartbeat; a row gone while the worker runs (deleted in the admin, a database
        restored from a backup) is written again, or fan-out would never send it work."""
        if not GpuWorker.objects.filter(name=self.name).update(last_heartbeat=timezone.now(), stopped_at=None):
            self.register()
            logger.warning("worker %s had no row in the registry: registered again", self.name)

    def _beat_until_stopped(self) -> None:
        every_s = liveness.interval().total_seconds()
        while not self._stop.wait(every_s):
            try:
                self.beat()
            except OperationalError as error:
                logger.error(
                    "heartbeat of %s failed, the database is unreachable (%s); retrying in %s s", self.name, error, every_s
                )
            except Exception:
                logger.exception("heartbeat of %s failed; retrying in %s s", self.name, every_s)
            finally:
                close_old_connections()

    def start(self) -> GpuWorker:
        worker = self.register()
        self._thread = threading.Thread(target=self._beat_until_stopped, name=f"heartbeat {self.name}", daemon=True)
        self._thread.start()
        logger.info("worker %s registered for %s on %s", self.name, self.queues, self.device.name)
        return worker

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        GpuWorker.objects.filter(name=self.name).update(stopped_at=timezone.now())
        close_old_connections()


_current: WorkerRegistration | None = None
_current_lock = threading.Lock()


def start_registration(device: Device, *, queues: list[str], slot: str = "") -> WorkerRegistration:
    """Register this process as the worker for `device` and keep it beating until stopped."""
    global _current
    with _current_lock:
        registration = WorkerRegistration(device, queues=queues, slot=slot)
        registration.start()
        _current = registration
        return registration


def current_registration() -> WorkerRegistration:
    """This process's registration; a process that consumes jobs without one registers on first use."""
    if _current is None:
        from django.conf import settings

        from verification.devices import detect_device
        from verification.queues import queues_of

        device = detect_device(settings.WORKER_ARCH)
        return start_registration(device, queues=queues_of(device.arch))
    return _current
