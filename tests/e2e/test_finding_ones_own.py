"""Finding one's own things in a real browser (issue 18): a problem's "Optimize this", a user's runs
and reports from the header, and staff deciding a report in the admin with the kernel before them."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from court.models import HackReport, OptimizationRun, ProofCheck
from tests.court.factories import make_candidate, make_evaluation
from tests.e2e.conftest import assert_fits_the_width, log_in, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def kernel():
    kernel = make_candidate(scale=5)
    make_evaluation(kernel, arch="cpu", speedup_eager=1.8, flags=["host_bound"])
    return kernel


def test_a_problem_page_starts_a_run_on_its_problem(kernel, page, court_server):
    page.goto(f"{court_server}/problems/{kernel.problem_id}/")
    screenshot(page, "problem")
    assert_fits_the_width(page)
    page.get_by_role("link", name="Optimize this").click()
    page.wait_for_url(f"**/?example={kernel.problem_id}")
    expect(page.locator(".cm-content")).to_contain_text("Scales by 5.")


def test_a_user_finds_their_runs_and_reports_from_the_header(kernel, page, court_server, viewport):
    ada = get_user_model().objects.create_user(f"ada-{viewport}", password="pw-ada-12345")
    run = OptimizationRun.objects.create(problem=kernel.problem, requester=ada, status="done", rounds_completed=2)
    report = HackReport.objects.create(candidate=kernel, reporter=ada, category="caching", text="caches", proof_code="p")
    ProofCheck.objects.create(report=report, arch="cpu", status="holds")

    log_in(page, court_server, f"ada-{viewport}", "pw-ada-12345", "/problems/")
    page.wait_for_url("**/problems/")
    main_menu = page.get_by_role("navigation", name="Main")
    main_menu.get_by_role("link", name="My runs").click()
    page.wait_for_url("**/accounts/runs/")
    expect(page.get_by_role("link", name=f"#{run.pk}")).to_be_visible()
    expect(page.get_by_text("2 of 2")).to_be_visible()
    screenshot(page, "my-runs")
    assert_fits_the_width(page)

    main_menu.get_by_role("link", name="My reports").click()
    page.wait_for_url("**/accounts/reports/")
    expect(page.get_by_text("cpu: Kernel still correct on the proof's inputs")).to_be_visible()
    screenshot(page, "my-reports")
    assert_fits_the_width(page)
    page.get_by_role("link", name=f"#{kernel.pk}").click()
    page.wait_for_url(f"**/kernels/{kernel.pk}/")


def test_staff_decide_a_report_with_the_kernel_before_them(kernel, page, court_server, viewport):
    get_user_model().objects.create_superuser(f"staff-{viewport}", "staff@example.org", "pw-staff-123")
    report = HackReport.objects.create(candidate=kernel, category="caching", text="caches", proof_code="p")
    ProofCheck.objects.create(report=report, arch="cpu")

    log_in(page, court_server, f"staff-{viewport}", "pw-staff-123", f"/admin/kernels/hackreport/{report.pk}/change/")
    page.wait_for_url(f"**/admin/kernels/hackreport/{report.pk}/change/")
    expect(page.locator(".kernel-code")).to_contain_text("return x * 5")
    expect(page.get_by_text("at 1.80x: host_bound")).to_be_visible()
    expect(page.get_by_text("no decision can be taken until its verdict is in")).to_be_visible()
    screenshot(page, "admin-report")
    assert_fits_the_width(page)

    page.get_by_label("Status").select_option("rejected")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("The report's proof is still being checked on cpu")).to_be_visible()
    screenshot(page, "admin-report-refused")
    report.refresh_from_db()
    assert report.status == "open"
