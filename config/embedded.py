"""The embedded worker: Dramatiq worker threads inside the web process.

In embedded mode the broker is in-process (no Redis), so the jobs a request enqueues must be
consumed by threads of the same process. The web entry point starts them once: one worker
registers as this machine's device (the CPU, or its GPU when one is present) and consumes its
queues with one thread; another consumes the inference queue. They are separate so that run
loops waiting for verdicts can never occupy the threads that would produce those verdicts.
"""

import logging
import threading

import dramatiq
from django.conf import settings
from django.utils.module_loading import autodiscover_modules

from inference.queues import INFERENCE_QUEUE
from jobrows.reconciler import reconcile_forever
from verification.devices import detect_device
from verification.heartbeats import start_registration
from verification.queues import queues_of

logger = logging.getLogger(__name__)


class _OneBrokerTwoWorkers(logging.Filter):
    """Each dramatiq Worker adds its own middleware to the broker, to consume queues declared later
    (whitelisted to its own): two workers on one broker are by design here, not the mistake dramatiq's
    warning at start-up suggests."""

    def filter(self, record: logging.LogRecord) -> bool:
        worker_middleware = (
            isinstance(record.args, tuple) and record.args and type(record.args[0]).__name__ == "_WorkerMiddleware"
        )
        return not (worker_middleware and "same type twice" in str(record.msg))


# One instance, so a restart of the workers (tests) does not add another to the broker's logger.
_one_broker_two_workers = _OneBrokerTwoWorkers()
_lock = threading.Lock()
_workers: list[dramatiq.Worker] = []
_registration = None


def start_embedded_worker() -> list[dramatiq.Worker]:
    """Start the in-process evaluation and inference workers (once per process)."""
    global _registration
    with _lock:
        if not _workers:
            autodiscover_modules(*settings.DRAMATIQ_AUTODISCOVER_MODULES)
            broker = dramatiq.get_broker()
            broker.logger.addFilter(_one_broker_two_workers)
            device = detect_device(settings.WORKER_ARCH)
            queues = queues_of(device.arch)
            for queue in [*queues, INFERENCE_QUEUE]:
                broker.declare_queue(queue)
            _registration = start_registration(device, queues=queues, slot="embedded")
            _workers.append(dramatiq.Worker(broker, queues=set(queues), worker_threads=1))
            _workers.append(dramatiq.Worker(broker, queues={INFERENCE_QUEUE}, worker_threads=settings.EMBEDDED_WORKER_THREADS))
            for worker in _workers:
                worker.start()
            # Jobs lost while the process was down (the in-process broker keeps none) or since.
            threading.Thread(target=reconcile_forever, name="reconciler", daemon=True).start()
            logger.info(
                "embedded workers started: evaluation on %s (%s), inference with %d threads",
                device.name,
                ", ".join(queues),
                settings.EMBEDDED_WORKER_THREADS,
            )
        return list(_workers)


def stop_embedded_worker():
    global _registration
    with _lock:
        for worker in _workers:
            worker.stop()
        _workers.clear()
        if _registration is not None:
            _registration.stop()
            _registration = None
