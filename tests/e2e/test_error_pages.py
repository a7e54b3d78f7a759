"""The error pages in a real browser, at 1280 and 390 px (issue 33): a board that does not exist, a
comparison with one, a hidden kernel and a private run opened without its key answer the site's 404
in its layout, saying what exists; an admin page an account may not open answers its 403; a board
compared with itself says so. Screenshots of these and of a run page under test-artifacts/screenshots/."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from court.models import OptimizationRun
from court.services import submit_problem
from tests.court.factories import CANDIDATE_SOURCE, PROBLEM_SOURCE, make_candidate, make_evaluation, make_problem
from tests.e2e.conftest import assert_fits_the_width, log_in, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

WIDTHS = {"1280": {"width": 1280, "height": 900}, "390": {"width": 390, "height": 844}}


@pytest.fixture(params=sorted(WIDTHS))
def at_width(request, browser):
    context = browser.new_context(viewport=WIDTHS[request.param])
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.viewport_name = request.param
    yield page
    context.close()


@pytest.fixture
def world():
    problem = make_problem(scale=3, origin="kernelbench", level=1, task=1)
    listed = make_candidate(problem=problem)
    make_evaluation(listed, arch="cpu", speedup_eager=2.0, verdict={"status": "verified"})
    hidden = make_candidate(problem=problem, code=CANDIDATE_SOURCE.format(scale=5), curation="hidden")
    make_evaluation(hidden, arch="cpu", speedup_eager=1.5, verdict={"status": "verified"})
    paste, _ = submit_problem(source=PROBLEM_SOURCE.format(scale=19))
    private = OptimizationRun.objects.create(problem=paste, session_key="someone-else", status="done")
    return {"hidden": hidden, "private": private}


def assert_the_sites_404(page, base: str, path: str, says: str, name: str):
    response = page.goto(f"{base}{path}")
    assert response.status == 404
    expect(page.get_by_role("heading", name="Not found", exact=True)).to_be_visible()
    expect(page.locator("#not-found")).to_have_text(says)
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    expect(page.get_by_role("link", name="cpu", exact=True)).to_have_attribute("href", "/leaderboard/cpu/")
    assert_fits_the_width(page)
    screenshot(page, name)


def test_what_is_not_there_answers_the_sites_404_saying_what_is(world, at_width, court_server):
    page, base = at_width, court_server
    assert_the_sites_404(page, base, "/leaderboard/h100/", "No kernel has been evaluated on 'h100'.", "404-no-board")
    assert_the_sites_404(page, base, "/leaderboard/cpu/vs/h100/", "No kernel has been evaluated on 'h100'.", "404-no-comparison")
    not_shown = "There is nothing here, or it is not shown to you."
    assert_the_sites_404(page, base, f"/kernels/{world['hidden'].pk}/", not_shown, "404-hidden-kernel")
    assert_the_sites_404(page, base, f"/runs/{world['private'].pk}/", "No such run.", "404-private-run")


def test_a_board_compared_with_itself_says_so(world, at_width, court_server):
    at_width.goto(f"{court_server}/leaderboard/cpu/vs/cpu/")
    expect(at_width.locator(".messages")).to_contain_text("A board compared with itself is the board")


def test_an_admin_page_an_account_may_not_open_answers_the_sites_403(world, at_width, court_server):
    get_user_model().objects.create_user("clerk", password="a-long-passphrase-1", is_staff=True)
    page = at_width
    log_in(page, court_server, "clerk", "a-long-passphrase-1", "/admin/")
    page.wait_for_url("**/admin/")
    response = page.goto(f"{court_server}/admin/kernels/candidate/older-harness/")
    assert response.status == 403
    expect(page.get_by_role("heading", name="Not allowed", exact=True)).to_be_visible()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    assert_fits_the_width(page)
    screenshot(page, "403-admin")


def test_the_run_page_at_both_widths(world, at_width, court_server):
    """The run page's screenshots beside the error pages', at the widths the issue names."""
    run = world["private"]
    at_width.goto(f"{court_server}/runs/{run.pk}/?key={run.link_key}")
    expect(at_width.get_by_role("heading", name=f"Run {run.pk} on Problem {run.problem_id}")).to_be_visible()
    assert_fits_the_width(at_width)
    screenshot(at_width, "run-page")
