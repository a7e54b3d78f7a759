"""A run page with a kernel staff hid, in a real browser: the page the server renders and the one the
socket's replay rebuilds both show the run's listed kernel and say that something was removed by
staff, and neither holds a trace of the hidden kernel (issue 33, item 2)."""

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot
from tests.inference.test_hidden_kernel_of_a_run import HIDDEN_CODE, HIDDEN_REASONING, LISTED_CODE, two_round_run

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def run_with_hidden_kernel():
    return two_round_run()


# The run is arranged before the server starts: its workers would verify on the CPU what is made after.
@pytest.mark.parametrize("viewport", ["desktop"])
def test_a_run_with_a_hidden_kernel_shows_the_rest_and_says_so(run_with_hidden_kernel, page, court_server):
    run, hidden, listed = run_with_hidden_kernel
    response = page.goto(f"{court_server}{run.get_absolute_url()}")
    assert response.status == 200
    transcript = page.locator("#transcript")
    expect(transcript).to_have_attribute("data-live", "true")  # rebuilt from the socket's replay

    removed = transcript.locator('[data-kind="removed"]')
    expect(removed).to_have_count(1)
    expect(removed).to_contain_text("Removed by staff")
    expect(removed).to_have_attribute("data-round", "1")
    kernel = transcript.locator(f'section.candidate[data-candidate="{listed.pk}"]')
    kernel.locator("details.code summary").click()
    expect(kernel.locator("div.code")).to_contain_text(LISTED_CODE)
    expect(kernel.locator("td.status")).to_have_text("verified")
    expect(transcript.locator(f'[data-candidate="{hidden.pk}"]')).to_have_count(0)
    html = page.content()
    assert HIDDEN_CODE not in html and HIDDEN_REASONING not in html and hidden.get_absolute_url() not in html
    screenshot(page, "run-hidden-kernel")
