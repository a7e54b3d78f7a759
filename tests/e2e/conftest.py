"""The browser tests' world: a real server (daphne, embedded mode) and Debian's Chromium.

The server runs as a separate process on the test database, so what a test arranges through
the ORM (committed: these tests use the transactional database) is what the browser sees, and
the run it starts is carried out by the server's own embedded workers.
"""

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from tests.conftest import IN_CI, REPO, once_per_run
from verification.models import GpuWorker

ARTIFACTS = REPO / "test-artifacts" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"]
VIEWPORTS = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _database_url() -> str:
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    return (
        f"postgres://{settings['USER']}{password}@{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}/{settings['NAME']}"
    )


@pytest.fixture(scope="session")
def static_root(tmp_path_factory):
    """The site's static files, collected once per test run: every worker's servers read them."""

    def collected() -> Path:
        root = tmp_path_factory.mktemp("static")
        env = dict(os.environ, COURT_STATIC_ROOT=str(root), COURT_VAR_DIR=str(tmp_path_factory.mktemp("collect-var")))
        collect = [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"]
        subprocess.run(collect, cwd=REPO, env=env, check=True)
        return root

    return once_per_run(tmp_path_factory, "static_root", collected)


class CourtServer:
    """The platform's web process in embedded mode (daphne), on the test database."""

    def __init__(self, env: dict[str, str], log: Path):
        self.env = env
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        with open(log, "w") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "daphne", "--bind", "127.0.0.1", "--port", str(self.port), "config.asgi:application"],
                cwd=REPO,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"the server did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.2)
        # The registry row its embedded worker wrote as it started (none with that worker off).
        self.registration = GpuWorker.objects.filter(name__endswith=":cpu:embedded", stopped_at=None).values().first()

    def register_again(self) -> None:
        """Puts back the registry row a flush removed, as the server wrote it, beating now."""
        if self.registration is None:
            return
        row = {key: value for key, value in self.registration.items() if key not in ("id", "name")}
        row.update(started_at=timezone.now(), last_heartbeat=timezone.now())
        GpuWorker.objects.update_or_create(name=self.registration["name"], defaults=row)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _server_env(static_root: Path, var_dir: Path) -> dict[str, str]:
    """The server's environment: this process's (tests set the model's address there), on the test
    database, in embedded mode."""
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "DATABASE_URL", "PYTEST_CURRENT_TEST")}
    env.update(
        DATABASE_URL=_database_url(),
        COURT_STATIC_ROOT=str(static_root),
        COURT_VAR_DIR=str(var_dir),
        COURT_WORKER_ARCH="cpu",
        DB_CONN_MAX_AGE="0",
        # No heartbeat in a test's time: the server's registry row is put back by `court_server`
        # after each flush, at the point where a server of its own would register (see there).
        COURT_HEARTBEAT_S="3600",
    )
    # One visitor's log-ins, for the server's rate limits, across every test that shares it
    # (tests/court/test_rate_limits.py tries the limits themselves).
    for scope in ("LOGIN", "LOGIN_ACCOUNT"):
        env.setdefault(f"COURT_THROTTLE_{scope}", "1000/min")
    return env


def _work_in_flight() -> bool:
    """Anything a server's workers may still be doing: a run not finished, a verdict or a proof's
    check still to come."""
    from court.models import Evaluation, OptimizationRun, ProofCheck

    return (
        OptimizationRun.objects.exclude(status__in=OptimizationRun.FINISHED).exists()
        or Evaluation.objects.filter(status__in=Evaluation.PENDING).exists()
        or ProofCheck.objects.filter(status=ProofCheck.Status.QUEUED).exists()
    )


@pytest.fixture(scope="session")
def _court_servers(django_db_setup, tmp_path_factory):
    """This worker's server, kept from test to test (starting one costs seconds of CPU)."""
    held = {"server": None, "logs": tmp_path_factory.mktemp("court-server")}
    yield held
    if held["server"] is not None:
        held["server"].stop()


@pytest.fixture
def court_server(transactional_db, static_root, _court_servers):
    """The platform in embedded mode on the test database; yields its base URL.

    One server serves this worker's tests in turn while each asks for the same environment and none
    leaves work in flight: a test that does (a run still streaming, a verdict still coming) has its
    server stopped, so nothing it started writes into the next test's database. A reused server's
    registry row went with the last test's flush; it is put back here, where a server of the test's
    own would have registered: after the fixtures before this one arranged the database (candidates
    saved then are fanned out to no worker) and before the test's body."""
    held = _court_servers
    env = _server_env(static_root, held["logs"] / "var")
    server = held["server"]
    if server is not None and (server.env != env or not server.alive()):
        server.stop()
        server = held["server"] = None
    if server is None:
        log = held["logs"] / f"server-{len(list(held['logs'].glob('server-*.log')))}.log"
        server = held["server"] = CourtServer(env, log)
    else:
        server.register_again()
    yield server.url
    if _work_in_flight() or not server.alive():
        server.stop()
        held["server"] = None


@pytest.fixture(scope="session")
def browser():
    """One Chromium per test process, open from its first browser test to the end. Playwright's sync
    API keeps an event loop running in this thread while it is open, so no async test may come after
    it: the e2e tests run last (tests/conftest.py sorts them so, and pytest-xdist hands tests out in
    that order). Django must be told that the synchronous test body may use the ORM.
    """
    if not Path(CHROMIUM).exists():
        if IN_CI:
            pytest.fail("chromium is not installed: `make test` installs it as root (apt-get install chromium).")
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            yield browser
            browser.close()


@pytest.fixture(params=sorted(VIEWPORTS))
def viewport(request):
    return request.param


# Every Content Security Policy violation on any page of the context, as the browser dispatches it
# (a refused script, style, image, worker or connection), handed to the test by an exposed function.
REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (event) => {
  window.courtPolicyViolation(
    `${location.pathname}: ${event.effectiveDirective} refused ${event.blockedURI || "inline"}` +
    ` (${event.sourceFile || "the page"}:${event.lineNumber})`
  );
});
"""


@pytest.fixture
def page(browser, viewport):
    """A page of its own context. A test fails at teardown when any page of that context broke the
    site's Content Security Policy: `page.policy_violations` lists what the browser refused, by the
    violation events and by the console's own reports (which also name what has no event)."""
    context = browser.new_context(viewport=VIEWPORTS[viewport], accept_downloads=True)
    violations = []

    def violation_event(text: str):
        violations.append(text)

    def console_report(message):
        if "Content Security Policy" in message.text:
            violations.append(message.text)

    context.expose_function("courtPolicyViolation", violation_event)
    context.add_init_script(REPORT_VIOLATIONS)
    context.on("console", console_report)
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.viewport_name = viewport
    page.policy_violations = violations
    yield page
    context.close()
    assert violations == [], "the Content Security Policy was broken:\n" + "\n".join(violations)


def screenshot(page, name: str) -> Path:
    """Kept as a CI artifact under test-artifacts/screenshots/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}-{page.viewport_name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def assert_fits_the_width(page):
    """Nothing makes the page scroll sideways, with every <details> open: wide tables and code
    scroll inside their own box."""
    page.evaluate("() => document.querySelectorAll('details').forEach((details) => { details.open = true; })")
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"{page.url} is {widths[0]}px wide in a {widths[1]}px {page.viewport_name} viewport"


def log_in(page, base: str, username: str, password: str, next_path: str):
    page.goto(f"{base}/accounts/login/?next={next_path}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
