"""A paste that hangs in `forward`, in a real browser (issue 33): its run ends after the first failure
that shows the problem cannot run, with that reason on its page, and does not hold the worker from
another person's run started meanwhile; the run's link opened in another browser can cancel it.

The analysis's limit is short here (INFERENCE_BUILTIN_ANALYSIS_TIMEOUT_S): the behaviour is the same
at the default 60 s, which README's measurement of the demo gives."""

import pytest
from playwright.sync_api import expect

from court.models import OptimizationRun
from court.services import submit_problem
from tests.court.factories import PROBLEM_SOURCE
from tests.e2e.conftest import VIEWPORTS, assert_fits_the_width, screenshot
from tests.e2e.test_live_run import VERDICT_S, start_run, type_into_editor, type_module, verdict_cell
from tests.inference.test_problem_cannot_run import HANGS

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# Torch's import alone takes seconds on a loaded host: a limit of a few seconds fails honest modules too.
ANALYSIS_LIMIT_S = 20


@pytest.fixture
def short_analysis(monkeypatch):
    monkeypatch.setenv("INFERENCE_BUILTIN_ANALYSIS_TIMEOUT_S", str(ANALYSIS_LIMIT_S))


@pytest.mark.slow
@pytest.mark.parametrize("viewport", ["desktop"])
def test_a_hanging_paste_ends_its_run_with_the_reason_and_holds_no_one_else(short_analysis, page, browser, court_server):
    page.goto(f"{court_server}/")
    type_into_editor(page, HANGS)
    hanging = start_run(page, rounds=2)

    other = browser.new_context(viewport=VIEWPORTS["desktop"])
    try:
        second = other.new_page()
        type_module(second, court_server)
        start_run(second)
        # Within the live run's own bound (120 s from its Run): the hang holds nothing it needs.
        expect(verdict_cell(second)).to_have_text("verified", timeout=VERDICT_S)
    finally:
        other.close()

    expect(page.locator("#run-status")).to_have_attribute("data-status", "failed", timeout=30_000)
    expect(page.locator("#run-error")).to_have_text(
        f"The problem cannot run on its own: the problem did not finish running within the analysis's limit of "
        f"{ANALYSIS_LIMIT_S} s, so no candidate can be checked against it."
    )
    hanging.refresh_from_db()
    assert hanging.candidates.count() == 0  # nothing was sent to the worker
    assert (hanging.finished_at - hanging.created_at).total_seconds() < 60
    expect(page.locator("#cancel-form")).to_be_hidden()
    screenshot(page, "hanging-paste-run")


@pytest.fixture
def someone_elses_run():
    paste, _ = submit_problem(source=PROBLEM_SOURCE.format(scale=17).replace("Scales by 17.", "Someone's paste."))
    # No loop runs it: the cancel request is what the test looks at.
    return OptimizationRun.objects.create(problem=paste, session_key="the-browser-that-started-it", status="waiting")


def test_the_runs_link_in_another_browser_can_cancel_it(someone_elses_run, page, court_server, viewport):
    run = someone_elses_run
    page.goto(f"{court_server}/runs/{run.pk}/?key={run.link_key}")
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator(".messages")).to_contain_text("Cancelling")
    run.refresh_from_db()
    assert run.cancel_requested_at is not None
    run.status = OptimizationRun.Status.CANCELLED
    run.save(update_fields=["status"])
    assert_fits_the_width(page)
