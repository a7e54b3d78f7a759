"""The trust report in a real browser, at desktop and phone width: reached from the footer, one row per
hack family, each linking to its checks' explanations and naming its tests with the result the suite
recorded (the plugin's file, tests/trust_results.py); and, after a harness change, the leaderboard
marking a kernel of an older harness until staff's re-verification brings its verdict."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from court import leaderboard, trust
from court.models import Evaluation
from evaluation.harness import HARNESS_VERSION
from tests.e2e.conftest import assert_fits_the_width, log_in, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

OUTCOMES = {"passed", "failed", "skipped"}
# Each family's row as the browser shows it, read in one round trip.
ROWS = """() => [...document.querySelectorAll("tr.family")].map((row) => ({
  name: row.querySelector("th").innerText,
  tests: [...row.querySelectorAll("code.test-id")].map((code) => code.innerText),
  outcomes: [...row.querySelectorAll(".outcome")].map((outcome) => outcome.innerText),
  links: [...row.querySelectorAll("a.check")].map((a) => {
    const target = a.getAttribute("href");
    return [target, document.querySelectorAll(target).length === 1];
  }),
}))"""


def test_the_report_names_each_familys_checks_and_tests(page, court_server):
    page.goto(f"{court_server}/")
    page.get_by_role("contentinfo").get_by_role("link", name="Which hacks the harness is tested against").click()
    page.wait_for_url("**/trust/")

    rows = page.evaluate(ROWS)
    assert [row["name"].split("\n")[0] for row in rows] == [family.name for family in trust.FAMILIES]
    for row, family in zip(rows, trust.FAMILIES):
        assert row["tests"] == list(family.tests)
        assert all(outcome.split(" ")[0] in OUTCOMES or outcome == "no result recorded yet" for outcome in row["outcomes"])
        assert [href for href, _ in row["links"]] == [f"#{trust.explanation(name)[0]}-{name}" for name in family.closed_by]
        assert [href for href, explained in row["links"] if not explained] == [], family.name
    assert_fits_the_width(page)
    screenshot(page, "trust-report")

    page.locator("tr.family a.check").first.click()
    page.wait_for_url("**/trust/#check-no_hidden_work")
    assert page.locator("#check-no_hidden_work").is_visible()
    assert page.get_by_role("heading", name="What is out of scope").is_visible()


@pytest.fixture
def older_kernel(cpu_release):
    """A release measured on this CPU, imported, one of its verified kernels' verdicts then marked as an
    older harness's (as a HARNESS_VERSION bump leaves it). Written from another thread: the browser of an
    earlier test keeps Playwright's event loop running in this one."""

    def build():
        call_command("import_problems", str(cpu_release.published))
        call_command("import_release", str(cpu_release.path))
        evaluation = Evaluation.objects.filter(status="verified", arch="cpu").order_by("pk").first()
        Evaluation.objects.filter(pk=evaluation.pk).update(harness_version="10")
        leaderboard.changed()
        get_user_model().objects.create_superuser("curator", "curator@example.org", "pw-curator-123")
        connection.close()
        return evaluation.candidate

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(build).result()


@pytest.mark.parametrize("viewport", ["desktop"])
def test_staff_re_verify_a_kernel_of_an_older_harness_and_its_mark_clears(older_kernel, page, court_server):
    mark = f'li.older-kernel[data-kernel="{older_kernel.pk}"]'
    page.goto(f"{court_server}/leaderboard/cpu/")
    assert "awaiting re-verification" in page.locator(mark).inner_text()
    screenshot(page, "older-harness-marked")

    log_in(page, court_server, "curator", "pw-curator-123", "/admin/kernels/candidate/")
    page.wait_for_url("**/admin/kernels/candidate/")
    page.get_by_role("link", name="Kernels of an older harness").click()
    page.get_by_role("button", name="Re-verify every kernel of an older harness").click()
    assert "1 listed kernels of an older harness sent for re-verification" in page.locator("ul.messagelist").inner_text()

    # The page reloads itself while verdicts are coming: the server's own worker verifies the kernel.
    page.locator('tr[data-arch="cpu"] td.done').filter(has_text="1").wait_for(timeout=240_000)
    assert Evaluation.objects.filter(candidate=older_kernel, harness_version=HARNESS_VERSION).exclude(status="queued").exists()

    page.goto(f"{court_server}/leaderboard/cpu/")
    assert page.locator(mark).count() == 0
    page.goto(f"{court_server}{older_kernel.get_absolute_url()}")
    versions = page.locator("section.verdict h3 small").all_inner_texts()
    assert f"harness {HARNESS_VERSION}" in versions and "harness 10" in versions
