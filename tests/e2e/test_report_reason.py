"""A hack report whose proof was not checked tells its reporter why, and the report form states the
rule a proof's inputs must keep (issue 33, item 3)."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from court.models import HackReport, ProofCheck
from evaluation.harness.sandboxed.reference_process import PROOF_MAGNITUDE
from tests.court.factories import make_candidate, make_problem
from tests.e2e.conftest import assert_fits_the_width, log_in, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

REFUSED = (
    "the hack report's proof inputs failed at take_proof: input 0 reaches 5e+06, beyond 1000 times the problem's own "
    "inputs (4.1e+03); a proof must define get_inputs() returning inputs of the problem's kind"
)


def test_a_refused_proof_tells_its_reporter_why_and_the_form_states_the_rule(page, court_server, viewport):
    get_user_model().objects.create_user("ada", password="a-long-passphrase-1")
    kernel = make_candidate(problem=make_problem(scale=31, origin="kernelbench", level=1, task=5))
    report = HackReport.objects.create(
        candidate=kernel, reporter=get_user_model().objects.get(username="ada"), category="caching", text="caches", proof_code="p"
    )
    ProofCheck.objects.create(report=report, arch="cpu", status="failed", reason=REFUSED)
    log_in(page, court_server, "ada", "a-long-passphrase-1", "/accounts/reports/")
    page.wait_for_url("**/accounts/reports/")
    expect(page.locator("td", has_text="Could not be checked")).to_contain_text(REFUSED)
    assert_fits_the_width(page)
    screenshot(page, "my-reports-refused-proof")

    page.goto(f"{court_server}/kernels/{kernel.pk}/report/")
    expect(page.locator("#proof-rule")).to_contain_text(f"no larger than {PROOF_MAGNITUDE:g} times the largest")
