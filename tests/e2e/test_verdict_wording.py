"""A verdict reads one way everywhere (issue 33, item 5): a speedup whose 95% interval reaches within
1% of 1 is "no measurable difference" in the verdict's reason as in its speedup cells, never "0.65x
over eager" beside it. The reason is the harness's own (scoring._reason)."""

import pytest
from playwright.sync_api import expect

from evaluation.harness.scoring import _reason
from tests.court.factories import make_candidate, make_evaluation, make_problem
from tests.e2e.conftest import screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

TIMING = {"speedups": {"eager": 0.65}, "speedup_intervals": {"eager": [0.42, 1.04]}}


def test_a_speedup_within_noise_reads_no_measurable_difference_in_the_reason_too(page, court_server, viewport):
    kernel = make_candidate(problem=make_problem(scale=29, origin="kernelbench", level=1, task=4))
    reason = _reason(None, TIMING, [{}] * 25)
    make_evaluation(
        kernel, arch="h100", speedup_eager=0.65, reason=reason, verdict={"status": "verified", "reason": reason, "timing": TIMING}
    )
    page.goto(f"{court_server}/kernels/{kernel.pk}/")
    shown = page.locator("section.verdict", has_text="h100")
    expect(shown).to_contain_text("All 25 checks passed; no measurable difference from eager (0.65x, 95% interval 0.42-1.04).")
    expect(shown).not_to_contain_text("0.65x over eager")
    screenshot(page, "verdict-wording")


def test_a_speedup_beyond_noise_reads_as_a_number():
    timing = {"speedups": {"eager": 2.0, "compile": 0.5}, "speedup_intervals": {"eager": [1.9, 2.1], "compile": [0.4, 0.6]}}
    assert _reason(None, timing, [{}]) == "All 1 checks passed; 2.00x over eager, 0.50x over compile."
