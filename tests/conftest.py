"""Fixtures shared by the whole suite: the real services, and KernelBench data.

Tests that need PostgreSQL or Redis use the real servers. Outside CI they skip when a server
is unreachable; in CI (CI=true) an unreachable server fails the test instead.
"""

import os
import pickle
import threading
from pathlib import Path

import pytest
from filelock import FileLock

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

    import verification.actors  # noqa: F401  (registers the actors on the broker)
    from verification import heartbeats
    from verification.devices import Device
    from verification.queues import queues_of

    device = Device(arch="cpu", name="test cpu", torch_device="cpu")
    queues = queues_of("cpu")
    for queue in queues:
        broker.declare_queue(queue)
    registration = heartbeats.start_registration(device, queues=queues, slot="pytest")
    worker = dramatiq.Worker(broker, queues=set(queues), worker_threads=1, worker_timeout=100)
    worker.start()
    yield registration
    worker.stop()
    registration.stop()
    heartbeats._current = None


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
    users" and left test_kernel_court behind)."""
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
def _test_settings(request, tmp_path_factory):
    """Pages render in tests without a collectstatic run (production keeps the hashed manifest).
    Users made by tests hash their passwords with MD5 (Django's advice for tests): PBKDF2's
    iterations cost most of a second per user on two cores; not in browser tests, whose server
    process checks passwords with the site's own hashers. A GPU host runs the harness's tests
    without Django (nor pytest-django): nothing to do there."""
    if not request.config.pluginmanager.hasplugin("django"):
        return
    settings = request.getfixturevalue("settings")
    settings.STATIC_ROOT = tmp_path_factory.getbasetemp()
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    if not request.node.get_closest_marker("e2e"):
        settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_rate_limits(request):
    """Every test starts with empty rate-limit counters (kept in the cache), whatever ran before it."""
    if not request.config.pluginmanager.hasplugin("django") or request.node.get_closest_marker("e2e"):
        yield
        return
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def rate(monkeypatch):
    """Narrow one rate. DRF binds the rates when the throttle classes are defined, so the test
    narrows them there (one dict shared by every throttle class, pages' and API's alike)."""
    from rest_framework.throttling import SimpleRateThrottle

    def narrow(scope: str, value: str = "2/hour"):
        monkeypatch.setitem(SimpleRateThrottle.THROTTLE_RATES, scope, value)

    return narrow


# The fixtures through which a test runs real verifications (sandboxed processes, seconds each):
# a test that uses one is marked `verifies`, and `make test-fast` leaves it out.
VERIFYING_FIXTURES = frozenset(
    {
        "verifier",
        "harness_cli",
        "sandboxed_harness",
        "cpu_worker",
        "inference_worker",
        "worker_process",
        "court_platform",
        "cpu_release",
    }
)


@pytest.fixture
def verifier(tmp_path_factory):
    """Real verifications through the harness (tests/harness/conftest.py, `Verifier`)."""
    from tests.harness.conftest import Verifier

    return Verifier(tmp_path_factory)


def once_per_run(tmp_path_factory, name: str, compute):
    """`compute()`'s value, computed once per test run: under pytest-xdist the first worker to ask
    computes it and the others read its pickle (files it wrote stay in that worker's temporary folder
    for the whole run). For session fixtures that cost tens of seconds of sandboxed work."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return compute()
    shared = tmp_path_factory.getbasetemp().parent / f"{name}.pickle"
    with FileLock(f"{shared}.lock"):
        if shared.is_file():
            return pickle.loads(shared.read_bytes())  # written by this test run's own worker
        value = compute()
        shared.write_bytes(pickle.dumps(value))
        return value


def _measured_release(tmp_path_factory):
    from tests.releases import measure_release

    return measure_release(tmp_path_factory.mktemp("cpu-release"))


def _analysed_kernelbench(tmp_path_factory):
    from tests.inference.conftest import analysed

    profiles = analysed(thread_start=_computing_a_shared_value)
    # Not kept for the run: run beside another test's monkeypatching of the sandbox (the background's
    # threads), an analysis may fail that would not alone.
    failed = {key: profile.error for key, (_, profile) in profiles.items() if not profile.ok}
    if failed:
        raise RuntimeError(f"KernelBench analyses failed: {failed}")
    return profiles


# The session fixtures whose values cost tens of seconds of sandboxed work, and how each is computed.
SHARED = {"cpu_release": _measured_release, "kernelbench_profiles": _analysed_kernelbench}
_computing_shared = threading.local()


def _computing_a_shared_value():
    """Marks this thread as one computing a shared value: in `_shared_values_started_early`'s threads
    the test running meanwhile may be one that must not start sandboxed processes, but these are not
    its own."""
    _computing_shared.active = True


def shared_value(tmp_path_factory, name: str):
    """The value of `SHARED[name]`, computed once per test run (`once_per_run`)."""
    return once_per_run(tmp_path_factory, name, lambda: SHARED[name](tmp_path_factory))


@pytest.fixture(scope="session", autouse=True)
def _shared_values_started_early(request, tmp_path_factory):
    """Under pytest-xdist the first worker starts computing the shared values the run's tests need
    as it starts, in threads beside its own tests. Left to the fixtures, every worker reaching a test
    that needs one would wait idle (they reach the same tests at about the same time) while one
    computes it. A value whose thread failed is computed again by the fixture, which reports why."""
    if os.environ.get("PYTEST_XDIST_WORKER") != "gw0":
        yield
        return

    def compute(name: str):
        _computing_a_shared_value()
        try:
            shared_value(tmp_path_factory, name)
        except Exception:  # noqa: BLE001  (the fixture computes it again and fails with the reason)
            pass

    needed = sorted({name for item in request.session.items for name in item.fixturenames} & SHARED.keys())
    threads = [threading.Thread(target=compute, args=(name,), name=f"shared {name}", daemon=True) for name in needed]
    for thread in threads:
        thread.start()
    yield
    for thread in threads:
        thread.join()


@pytest.fixture(scope="session")
def cpu_release(tmp_path_factory):
    """A release measured once a run by the real harness on this CPU (tests/releases.py): the batch
    over a few tiny published entries, then packed. Tens of seconds. Shared: tests read its files
    and copy what they change."""
    return shared_value(tmp_path_factory, "cpu_release")


@pytest.fixture(scope="session")
def sandboxed_harness():
    """Declares a test that reaches the sandboxed harness other than through `verifier`: the builtin
    optimizer's inspection of a problem, or the harness's CLI in a process of its own."""


# A test that starts the site in processes of its own (schemathesis, the fault tests, the README's
# examples): marked `server`.
SERVER_FIXTURES = frozenset({"api_server", "court_platform", "readme_site"})
# Fixtures whose world each pytest-xdist worker would build anew (a PostgreSQL cluster and its
# template database; a server with workers off and wide rates): their tests share one worker
# (`--dist loadgroup`, Makefile), which builds it once.
WORKER_GROUPS = {"court_platform": "fault-platform", "api_server": "api-server"}


def pytest_configure(config):
    """The trust report's evidence: the outcomes of the tests court/trust.py's families name, written
    at the end of the run, which fails when one of them does not exist or failed (tests/trust_results.py)."""
    from court.trust import named_tests
    from tests.trust_results import TrustResults, results_path

    config.pluginmanager.register(TrustResults(named_tests(), results_path()), "trust_results")


def pytest_collection_modifyitems(items):
    """Tests that verify are marked by the fixtures they use, and so are the groups above. Browser
    tests run last: they are the slowest, and Playwright's event loop must not overlap the async
    tests (see tests/e2e/conftest.py)."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if VERIFYING_FIXTURES & used:
            item.add_marker(pytest.mark.verifies)
        if SERVER_FIXTURES & used:
            item.add_marker(pytest.mark.server)
        for fixture, group in WORKER_GROUPS.items():
            if fixture in used:
                item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: "/e2e/" in str(item.path))


@pytest.fixture(autouse=True)
def _sandboxed_processes_only_through_a_fixture(request, monkeypatch):
    """A test that starts a sandboxed process without one of VERIFYING_FIXTURES fails, so the fast
    tier's selection cannot silently go stale."""
    if request.node.get_closest_marker("verifies") or request.node.get_closest_marker("e2e"):
        return
    from evaluation.harness import sandbox

    launch = sandbox.launch

    def refuse(*args, **kwargs):
        if getattr(_computing_shared, "active", False):  # a shared value's thread, not this test
            return launch(*args, **kwargs)
        raise AssertionError(
            "this test starts a sandboxed process: ask for the `verifier` fixture (or another of "
            "tests/conftest.py's VERIFYING_FIXTURES), so that `make test-fast` leaves it out"
        )

    monkeypatch.setattr(sandbox, "launch", refuse)
