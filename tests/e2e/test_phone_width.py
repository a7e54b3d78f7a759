"""No page of the site scrolls sideways on a 390 px phone (issue 18): every route of the URLconf that
answers a page, its parameters filled as the route walk fills them (tests/court/walk.py), visited in
Chromium by a signed-in user with every <details> open. A new page is walked as soon as its route
exists. The data is a release measured by the harness on this CPU, imported (kernel pages with every
measure), and a run with its transcript and a hack report."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from court.models import Candidate, Evaluation, HackReport, OptimizationRun, RunEvent
from tests.court.walk import Targets, http_paths
from tests.e2e.conftest import log_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.parametrize("viewport", ["phone"])]

# Not pages of the site: the API (JSON, its docs are third-party viewers), the admin (Django's own,
# for staff at a desk), and sign-out (a form post).
NOT_PAGES = ("api/", "admin/", "accounts/logout/")


@pytest.fixture
def world(cpu_release):
    """Written from another thread: the browser of an earlier test keeps Playwright's event loop
    running in this one, where live updates sent from synchronous code may not go."""

    def build() -> Targets:
        call_command("import_problems", str(cpu_release.published))
        call_command("import_release", str(cpu_release.path))
        user = get_user_model().objects.create_user("reader", password="pw-reader-123")
        kernel = Evaluation.objects.filter(status="verified").first().candidate
        run = OptimizationRun.objects.create(problem=kernel.problem, requester=user, status="done")
        events = [
            ("prompt", kernel.problem.source, {}),
            ("reasoning", "A long line of reasoning " * 40, {}),
            ("answer", f"```python\n{kernel.code}```", {}),
            ("candidate", kernel.code, {"candidate": kernel.pk, "url": kernel.get_absolute_url()}),
        ]
        for seq, (kind, text, data) in enumerate(events, start=1):
            RunEvent.objects.create(run=run, seq=seq, round=1, kind=kind, text=text, data=data)
        report = HackReport.objects.create(candidate=kernel, reporter=user, category="other", text="odd " * 80)
        targets = Targets(
            problems=[kernel.problem_id],
            kernels=list(Candidate.objects.values_list("pk", flat=True)),
            runs=[run.pk],
            reports=[report.pk],
            users=[user],
            arch="cpu",
        )
        paths = [path for route, path in http_paths(targets) if not route.startswith(NOT_PAGES)]
        connection.close()
        return paths

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(build).result()


def test_no_page_scrolls_sideways_on_a_phone(world, page, court_server):
    log_in(page, court_server, "reader", "pw-reader-123", "/")
    wide, seen = [], []
    for path in world:
        # Asked first, in the browser's session: only pages are opened (a download or a POST-only
        # route's 405 would leave the tab on an error page that interrupts the next navigation).
        answer = page.request.get(f"{court_server}{path}")
        if not answer.ok or "text/html" not in answer.headers.get("content-type", ""):
            continue
        page.goto(f"{court_server}{path}")
        page.evaluate("() => document.querySelectorAll('details').forEach((details) => { details.open = true; })")
        width, viewport = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        seen.append(path)
        if width > viewport:
            wide.append(f"{path}: {width}px")

    assert wide == [], f"pages wider than a {page.viewport_size['width']}px phone: {wide}"
    # The walk reached the site's pages, not only its errors.
    assert {"/", "/problems/", "/leaderboard/cpu/", "/audit/cuda-l1/cpu/"} <= {path.split("?")[0] for path in seen}, seen
    assert any(path.startswith("/kernels/") for path in seen) and any(path.startswith("/runs/") for path in seen), seen
