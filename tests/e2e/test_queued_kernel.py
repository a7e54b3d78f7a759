"""A queued kernel's page says what its verdict waits for, as the run page does (issue 33, item 7)."""

import pytest
from playwright.sync_api import expect

from tests.court.factories import make_candidate, make_problem
from tests.e2e.conftest import assert_fits_the_width, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def queued_kernel():
    """Made before the test's server registers its worker, so no job is sent for it: it stays queued."""
    from court.models import Evaluation
    from evaluation.harness import HARNESS_VERSION

    candidate = make_candidate(problem=make_problem(scale=23, origin="kernelbench", level=1, task=3))
    Evaluation.objects.get_or_create(candidate=candidate, arch="cpu", harness_version=HARNESS_VERSION)
    return candidate


def test_a_queued_kernels_page_says_what_it_waits_for(queued_kernel, page, court_server, viewport):
    page.goto(f"{court_server}/kernels/{queued_kernel.pk}/")
    expect(page.locator("section.verdict .status")).to_have_text("Queued")
    # The server's own worker is registered by now: the sentence names it (verification.waiting).
    expect(page.locator("section.verdict .wait")).to_have_text("Next in line for the only cpu worker.")
    assert_fits_the_width(page)
    screenshot(page, "queued-kernel")
