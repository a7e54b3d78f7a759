"""Fixtures shared by the whole suite: the real services, and KernelBench data.

Tests that need PostgreSQL or Redis use the real servers. Outside CI they skip when a server
is unreachable; in CI (CI=true) an unreachable server fails the test instead.
"""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RELEASE_DIR = REPO / "data" / "cuda-l1"
IN_CI = os.environ.get("CI", "").lower() == "true"
TEST_REDIS_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/15"


def unavailable(what: str):
    """Skip outside CI; in CI the service must be there, so fail."""
    if IN_CI:
        pytest.fail(f"{what} is unreachable, and CI must run this test against it.")
    pytest.skip(f"{what} is unreachable")


@pytest.fixture
def redis_url():
    import redis

    client = redis.Redis.from_url(TEST_REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.exceptions.ConnectionError:
        unavailable(f"Redis at {TEST_REDIS_URL}")
    client.flushdb()
    yield TEST_REDIS_URL
    client.flushdb()
    client.close()


@pytest.fixture
def broker():
    """The configured broker (Redis in CI, in-process elsewhere), emptied around the test."""
    import dramatiq

    broker = dramatiq.get_broker()
    broker.flush_all()
    yield broker
    broker.flush_all()


@pytest.fixture
def cpu_worker(transactional_db, broker):
    """This process as the `cpu` worker, consuming its queues in a thread, as embedded mode does."""
    import dramatiq

    import evaluation.actors  # noqa: F401  (registers the actors on the broker)
    from evaluation import registry
    from evaluation.devices import Device
    from evaluation.queues import queues_of

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


@pytest.fixture
def inference_worker(transactional_db, broker):
    """A thread of this process consuming the run loops' queue, as embedded mode does."""
    import dramatiq

    import inference.actors  # noqa: F401  (registers the run loop on the broker)
    from inference.queues import INFERENCE_QUEUE

    broker.declare_queue(INFERENCE_QUEUE)
    worker = dramatiq.Worker(broker, queues={INFERENCE_QUEUE}, worker_threads=1, worker_timeout=100)
    worker.start()
    yield worker
    worker.stop()


@pytest.fixture(scope="session")
def h100_release():
    return RELEASE_DIR / "h100.jsonl.gz"


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, and at the end no session of it left open: threads of this
    process keep their connections (asgiref's executor behind `database_sync_to_async`, for
    CONN_MAX_AGE), and PostgreSQL drops no database with sessions (CI warned "being accessed by other
    users" and left test_kernel_arena behind)."""
    yield
    from django.db import connection

    with django_db_blocker.unblock():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )


@pytest.fixture(autouse=True)
def _static_files_without_collectstatic(request, tmp_path_factory):
    """Pages render in tests without a collectstatic run; production keeps the hashed manifest.
    A GPU host runs the harness's tests without Django (nor pytest-django): nothing to do there."""
    if not request.config.pluginmanager.hasplugin("django"):
        return
    settings = request.getfixturevalue("settings")
    settings.STATIC_ROOT = tmp_path_factory.getbasetemp()
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


def pytest_collection_modifyitems(items):
    """Browser tests run last: they are the slowest, and Playwright's event loop must not overlap
    the async tests (see tests/e2e/conftest.py)."""
    items.sort(key=lambda item: "/e2e/" in str(item.path))
