"""manage.py verification_worker: one evaluation worker process for this machine's device.

It detects the device (pin one GPU per process with CUDA_VISIBLE_DEVICES), registers itself,
keeps a heartbeat, and consumes exactly its architecture's queues: gpu.<arch> and its bulk
queue. It needs only DATABASE_URL and REDIS_URL (COURT_ROLE=worker), never the web's secrets.
"""

import signal
import threading

import dramatiq
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils.module_loading import autodiscover_modules

from evaluation.harness.sandbox import confinement
from verification.devices import detect_device
from verification.heartbeats import start_registration
from verification.queues import queues_of


class Command(BaseCommand):
    help = "Run one evaluation worker for this device, consuming gpu.<arch> and gpu.<arch>.bulk."

    def add_arguments(self, parser):
        parser.add_argument("--arch", default=settings.WORKER_ARCH, help="Override the detected architecture key")
        parser.add_argument("--threads", type=int, default=1, help="Worker threads (jobs still time one at a time)")

    def handle(self, *args, arch, threads, **options):
        if not settings.REDIS_URL:
            raise CommandError(
                "REDIS_URL is not set: a separate worker process needs the shared Redis broker. In embedded "
                "mode the web process runs its own worker threads."
            )
        state = confinement()
        if settings.SANDBOX_REQUIRED and not state.confined:
            raise CommandError(
                f"this worker has no OS sandbox for candidates ({state.detail}); it will not evaluate without one."
            )
        autodiscover_modules(*settings.DRAMATIQ_AUTODISCOVER_MODULES)
        device = detect_device(arch)
        queues = queues_of(device.arch)
        broker = dramatiq.get_broker()
        for queue in queues:
            broker.declare_queue(queue)
        registration = start_registration(device, queues=queues)
        worker = dramatiq.Worker(broker, queues=set(queues), worker_threads=threads)
        worker.start()
        self.stdout.write(f"worker {registration.name} on {device.name}: consuming {', '.join(queues)}")

        stopping = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stopping.set())
        stopping.wait()
        self.stdout.write(f"worker {registration.name} stopping")
        worker.stop()
        registration.stop()
        broker.close()
