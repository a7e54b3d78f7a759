"""Browsing in a real browser: the leaderboard leads to a kernel, its download, and a hack report."""

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from court.models import Evaluation, HackReport
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import make_candidate
from tests.court.test_kernel_page import VERDICT
from tests.e2e.conftest import log_in, screenshot
from verification.evaluations import record_verdict

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def kernel():
    candidate = make_candidate(scale=3, origin_label="cuda-l1", origin="import")
    evaluation = Evaluation.objects.create(candidate=candidate, arch="h100", harness_version=HARNESS_VERSION)
    record_verdict(evaluation, VERDICT, worker="gpu-host:h100:0")
    return candidate


def test_leaderboard_to_kernel_to_download(kernel, page, court_server):
    page.goto(f"{court_server}/leaderboard/")
    page.get_by_role("link", name=f"#{kernel.pk}").click()
    page.wait_for_url(f"**/kernels/{kernel.pk}/")
    assert page.get_by_text("Kernels launched").is_visible()
    screenshot(page, "kernel")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download .py").click()
    assert Path(download.value.path()).read_bytes() == kernel.code.encode()
    page.goto(f"{court_server}/leaderboard/h100/")
    screenshot(page, "leaderboard")


def test_a_hack_report_filed_in_the_browser_is_seen_by_staff_in_admin(kernel, page, court_server, viewport):
    users = get_user_model().objects
    users.create_user(f"reporter-{viewport}", password="pw-report-123")
    users.create_superuser(f"staff-{viewport}", "staff@example.org", "pw-staff-123")

    log_in(page, court_server, f"reporter-{viewport}", "pw-report-123", f"/kernels/{kernel.pk}/report/")
    page.get_by_label("What kind of hack").select_option("caching")
    page.get_by_label("What the kernel does").fill(f"It returns its first output forever ({viewport}).")
    page.get_by_role("button", name="File the report").click()
    page.wait_for_url(f"**/kernels/{kernel.pk}/")
    assert HackReport.objects.filter(candidate=kernel, reporter__username=f"reporter-{viewport}").exists()

    page.get_by_role("button", name=f"Log out reporter-{viewport}").click()
    log_in(page, court_server, f"staff-{viewport}", "pw-staff-123", "/admin/kernels/hackreport/")
    page.wait_for_url("**/admin/kernels/hackreport/")
    assert page.get_by_text(f"It returns its first output forever ({viewport}).").is_visible()
    screenshot(page, "admin-reports")
