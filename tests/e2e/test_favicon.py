"""Every page names its icon, so a browser asks for no /favicon.ico that answers 404 (issue 33, item 8)."""

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("viewport", ["desktop"])
def test_a_page_loads_its_icon_and_nothing_answers_404(page, court_server):
    missing = []
    page.on("response", lambda response: missing.append(response.url) if response.status == 404 else None)
    page.goto(f"{court_server}/problems/")
    icon = page.locator("link[rel=icon]").get_attribute("href")
    assert page.request.get(f"{court_server}{icon}").status == 200
    page.wait_for_load_state("networkidle")
    assert missing == []
