"""The audit of published kernels in a real browser, at desktop and phone width: a release measured by
the harness on this CPU, imported, read from its summary down to the kernel that proves a figure."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.management import call_command
from django.db import connection

from court.models import Evaluation
from tests.e2e.conftest import assert_fits_the_width, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def imported(cpu_release):
    """Imported from another thread: in this one, the browser of an earlier test keeps Playwright's
    event loop running, where the import's live updates (sent from synchronous code) may not go."""

    def imports():
        call_command("import_problems", str(cpu_release.published))
        call_command("import_release", str(cpu_release.path))
        connection.close()

    with ThreadPoolExecutor(1) as thread:
        thread.submit(imports).result()


def test_the_audit_leads_from_a_figure_to_the_kernel_that_proves_it(imported, page, court_server):
    page.goto(f"{court_server}/audit/cuda-l1/")
    page.wait_for_url("**/audit/cuda-l1/cpu/")
    assert page.get_by_role("heading", name="At a glance on cpu").is_visible()
    page.wait_for_function("() => window.Chart && Chart.getChart(document.getElementById('audit-chart'))")
    assert_fits_the_width(page)
    screenshot(page, "audit")

    rejected = Evaluation.objects.get(status="rejected")
    page.get_by_role("link", name="1 rejected (an integrity check)").click()
    page.wait_for_url("**/audit/cuda-l1/cpu/?show=rejected#entries")
    assert page.locator("table.audit tbody tr").count() == 1
    assert page.locator("table.audit").get_by_text("output_is_plain_tensor", exact=True).is_visible()
    page.get_by_role("link", name=f"#{rejected.candidate_id}").click()
    page.wait_for_url(f"**/kernels/{rejected.candidate_id}/#verdict-{rejected.pk}")
    assert page.get_by_text("Imported from the release cpu-test, not run by a worker here", exact=False).is_visible()
    assert page.get_by_role("heading", name="Published claims (not our measurements)").is_visible()
    assert_fits_the_width(page)


def test_the_leaderboard_names_the_release_a_kernel_was_measured_in(imported, page, court_server):
    page.goto(f"{court_server}/leaderboard/")
    page.wait_for_url("**/leaderboard/cpu/")
    assert page.locator("table.rows small.release").get_by_text("release cpu-test").first.is_visible()
    assert_fits_the_width(page)
    screenshot(page, "leaderboard-release")
