"""A new user's way to the API in a real browser (issue 33): sign up with an e-mail address, create a
token on the account's token page and call the API with it."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from tests.e2e.conftest import assert_fits_the_width, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_new_user_signs_up_and_calls_the_api_with_a_token(page, court_server, viewport):
    page.goto(f"{court_server}/accounts/signup/")
    page.get_by_label("Username").fill(f"ada-{viewport}")
    page.get_by_label("E-mail address").fill(f"ada-{viewport}@example.org")
    page.get_by_label("Password", exact=True).fill("kernel-court-pw-9")
    page.get_by_label("Password confirmation").fill("kernel-court-pw-9")
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_role("button", name=f"Log out ada-{viewport}")).to_be_visible()
    assert get_user_model().objects.get(username=f"ada-{viewport}").email == f"ada-{viewport}@example.org"

    page.get_by_role("navigation", name="Main").get_by_role("link", name="API token").click()
    page.wait_for_url("**/accounts/token/")
    expect(page.get_by_text("You have no API token.")).to_be_visible()
    page.get_by_role("button", name="Create a token").click()
    expect(page.get_by_text("Copy it now.")).to_be_visible()
    key = page.locator("pre.code code").first.inner_text()
    expect(page.get_by_text(f'curl -H "Authorization: Token {key}"')).to_be_visible()
    screenshot(page, "api-token")
    assert_fits_the_width(page)

    # Without the session's cookie, only the token says who is calling.
    page.context.clear_cookies()
    assert page.request.get(f"{court_server}/api/reports/").status == 401
    answer = page.request.get(f"{court_server}/api/reports/", headers={"Authorization": f"Token {key}"})
    assert answer.status == 200 and answer.json()["results"] == []
