"""In a real browser, at desktop and phone widths: the demo says before Run that a paste stays with
its run; the run's link opens it, its kernel and its module; a stranger without the link finds none
of them, and the paste is in no public list."""

import pytest
from playwright.sync_api import expect

from court.models import OptimizationRun
from court.services import submit_problem
from tests.court.factories import CANDIDATE_SOURCE, PROBLEM_SOURCE, make_candidate, make_evaluation
from tests.e2e.conftest import assert_fits_the_width, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_demo_says_before_run_that_a_paste_stays_with_its_run(page, court_server, viewport):
    page.goto(f"{court_server}/")
    notice = page.locator("#run-form #paste-notice")  # in the form, with its Run button
    expect(notice).to_contain_text("seen only through its run's link")
    expect(notice).to_contain_text("unless staff promote it")
    assert_fits_the_width(page)
    screenshot(page, "demo-paste-notice")


@pytest.fixture
def pasted_run():
    paste, _ = submit_problem(source=PROBLEM_SOURCE.format(scale=13).replace("Scales by 13.", "A paste of mine."))
    run = OptimizationRun.objects.create(problem=paste, session_key="someone-else", status="done")
    kernel = make_candidate(problem=paste, code=CANDIDATE_SOURCE.format(scale=13), run=run, origin="model", round=1)
    make_evaluation(kernel, arch="h100", speedup_eager=3.0, verdict={"status": "verified"})
    return run


def test_a_paste_is_seen_through_its_run_link_alone(pasted_run, page, browser, court_server, viewport):
    page.goto(f"{court_server}{pasted_run.get_absolute_url()}")
    expect(page.get_by_role("heading", name=f"Run {pasted_run.pk} on Problem {pasted_run.problem_id}")).to_be_visible()
    assert_fits_the_width(page)
    screenshot(page, "paste-run")
    kernel = pasted_run.candidates.get()
    page.goto(f"{court_server}/kernels/{kernel.pk}/")
    expect(page.get_by_role("heading", name=f"Kernel #{kernel.pk}")).to_be_visible()
    page.goto(f"{court_server}/problems/{pasted_run.problem_id}/")
    expect(page.get_by_role("heading", name=f"Problem {pasted_run.problem_id}: A paste of mine.")).to_be_visible()

    stranger = browser.new_context()
    try:
        other = stranger.new_page()
        for path in (f"/runs/{pasted_run.pk}/", f"/kernels/{kernel.pk}/", f"/problems/{pasted_run.problem_id}/"):
            assert other.goto(f"{court_server}{path}").status == 404
        for path in ("/problems/", "/leaderboard/h100/"):
            other.goto(f"{court_server}{path}")
            expect(other.get_by_text("A paste of mine.")).to_have_count(0)
            expect(other.get_by_role("link", name=f"#{kernel.pk}", exact=True)).to_have_count(0)
    finally:
        stranger.close()
