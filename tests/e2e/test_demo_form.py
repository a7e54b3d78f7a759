"""The demo's form in a real browser: every refusal is shown beside its field, in words that say what
to do, where the browser used to block the form without a word (the editor hides the textarea the
browser checked). Screenshots at desktop and phone widths; the page never scrolls sideways."""

import pytest
from playwright.sync_api import expect

from court.models import OptimizationRun
from tests.court.factories import make_problem
from tests.e2e.conftest import assert_fits_the_width, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def run_button(page):
    return page.get_by_role("button", name="Run", exact=True)


def test_every_refusal_is_shown_beside_its_field(page, court_server, viewport):
    problem = make_problem(scale=7, origin="kernelbench", level=1, task=1)
    page.goto(f"{court_server}/")
    run_button(page).click()
    expect(page.locator("#source-errors")).to_have_text(
        "Paste a PyTorch module (Model, get_inputs, get_init_inputs) into the editor, or load one of the example problems above."
    )
    expect(page.locator("#editor")).to_be_visible()
    expect(page.get_by_text("{#")).to_have_count(0)
    screenshot(page, "demo-empty-paste")
    assert_fits_the_width(page)

    page.get_by_label("Example problem").select_option(str(problem.pk))
    expect(page.locator("#id_source")).to_have_value(problem.source)
    page.get_by_label("Rounds").fill("0")
    run_button(page).click()
    expect(page.locator("#max_rounds-errors")).to_have_text("A run needs at least one round: choose from 1 to 5.")
    expect(page.get_by_label("Rounds")).to_have_attribute("aria-describedby", "max_rounds-errors")
    expect(page.locator("#source-errors")).to_have_count(0)
    screenshot(page, "demo-rounds")
    assert_fits_the_width(page)

    # A backend the page did not offer (a stale page, a hand-made request).
    page.get_by_label("Rounds").fill("1")
    page.get_by_label("Model backend").evaluate("select => select.add(new Option('gpt-9', 'gpt-9', true, true))")
    run_button(page).click()
    expect(page.locator("#backend-errors")).to_contain_text("That backend is not available here: choose one of Builtin")
    assert_fits_the_width(page)
    assert not OptimizationRun.objects.exists()
