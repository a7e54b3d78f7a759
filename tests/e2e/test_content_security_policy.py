"""In a real browser, under the site's Content Security Policy: the pages the other browser tests do not
visit (the API's docs, the admin's lists and forms, error pages) break nothing, and what libraries add
at run time (CodeMirror's and Redoc's styles, Swagger UI's icons, Chart.js's canvas) is admitted.

The `page` fixture fails any test whose pages broke the policy (tests/e2e/conftest.py); one test here
shows that it notices.
"""

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from tests.court.factories import make_candidate, make_evaluation
from tests.e2e.conftest import log_in

# One viewport: what the policy admits does not depend on the width.
pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.parametrize("viewport", ["desktop"])]


@pytest.fixture
def evaluation():
    """A verified kernel on h100, stored without publishing (the browser's event loop runs already)."""
    return make_evaluation(make_candidate(scale=3), arch="h100", speedup_eager=1.5, verdict={"status": "verified"})


def test_a_refused_style_fails_the_page_fixture(page, court_server):
    page.goto(f"{court_server}/problems/")
    refused = page.evaluate(
        """() => new Promise((resolve) => {
          document.addEventListener("securitypolicyviolation", (event) => resolve(event.effectiveDirective), { once: true });
          const style = document.createElement("style");
          style.textContent = "body { color: red }";
          document.head.append(style);
        })"""
    )
    assert refused == "style-src-elem"
    expect(page.locator("body")).not_to_have_css("color", "rgb(255, 0, 0)")
    assert any(violation.startswith("/problems/: style-src-elem refused inline") for violation in page.policy_violations)
    page.policy_violations.clear()  # caught: this test passes


def test_the_code_editor_and_the_chart_are_drawn_under_the_policy(evaluation, page, court_server):
    page.goto(f"{court_server}/")
    # display: flex on the gutters comes from the style element CodeMirror adds, with the page's nonce.
    expect(page.locator(".cm-editor .cm-gutters")).to_have_css("display", "flex")
    page.goto(f"{court_server}/leaderboard/h100/")
    page.wait_for_function("() => window.Chart && window.Chart.getChart('distribution')")
    # The axis counts problems: whole numbers only (one problem drew 0, 0.1, ... 1.0 before, issue 33).
    ticks = page.evaluate("() => Chart.getChart('distribution').scales.y.ticks.map(t => t.value)")
    assert ticks and all(value == int(value) for value in ticks), ticks


def test_the_api_docs_render_under_the_policy(page, court_server):
    # Both pages fetch the schema, generated on each request: on the suite's loaded host that passed 5 s once.
    page.goto(f"{court_server}/api/docs/")
    expect(page.locator(".swagger-ui .opblock").first).to_be_visible(timeout=30_000)
    page.goto(f"{court_server}/api/redoc/")
    expect(page.locator("#redoc-container h1").first).to_contain_text("Kernel Court API", timeout=30_000)


def test_the_admin_lists_and_forms_break_nothing(evaluation, page, court_server):
    get_user_model().objects.create_superuser("chief", "chief@example.org", "pw-chief-123")
    log_in(page, court_server, "chief", "pw-chief-123", "/admin/")
    page.wait_for_url("**/admin/")
    for model in admin.site._registry:
        page.goto(f"{court_server}/admin/{model._meta.app_label}/{model._meta.model_name}/")
        expect(page.locator("#changelist")).to_be_visible()
    page.goto(f"{court_server}/admin/kernels/evaluation/{evaluation.pk}/change/")
    expect(page.locator("pre.pretty-json").first).to_have_css("white-space", "pre-wrap")
    page.goto(f"{court_server}/admin/auth/user/add/")
    expect(page.locator("#user_form")).to_be_visible()


def test_error_pages_break_nothing(page, court_server):
    response = page.goto(f"{court_server}/no-such-page/")
    assert response.status == 404
    page.goto(f"{court_server}/accounts/login/")
    page.context.clear_cookies()  # the form's CSRF cookie: the log-in is refused
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("pw-ada-123")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Form refused")).to_be_visible()
