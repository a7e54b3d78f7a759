"""Every page carries the Content Security Policy, and nothing on it needs more than the policy allows.

Every route of the URLconf is walked (the hidden-walk's world and filling, tests/court/test_hidden_walk.py),
as a visitor and as staff, so a new page is held to the policy as soon as it exists. What the browser
itself sees (styles and scripts that libraries add at run time) is for the browser tests, which fail on
any violation (tests/e2e/conftest.py).
"""

from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from django.urls import path

from court.models import Candidate, OptimizationRun, Problem
from tests.court.test_hidden_walk import ARCH, OTHER_ARCH, build_world
from tests.court.walk import Targets, http_paths

pytestmark = pytest.mark.django_db(transaction=True)

# Types of <script> a browser runs; others (application/json: json_script's data) are data.
SCRIPT_TYPES = {"", "text/javascript", "application/javascript", "module"}
# The one page whose policy admits inline styles: Redoc adds its own before it can be given a nonce (config/urls.py).
INLINE_STYLES_ALLOWED = {"/api/redoc/"}


def policy(response) -> dict[str, list[str]]:
    header = response.headers.get("Content-Security-Policy")
    assert header, f"{response.request['PATH_INFO']} has no Content-Security-Policy"
    return {name: values for name, *values in (directive.split() for directive in header.split(";"))}


class InlineCode(HTMLParser):
    """What a page runs or styles inline: <script> (of a type that runs) without src and <style>, each
    with its nonce; style="" and on...="" attributes, and javascript: links, which no nonce can admit."""

    def __init__(self):
        super().__init__()
        self.elements: list[tuple[str, str | None]] = []
        self.attributes: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script" and "src" not in attrs and (attrs.get("type") or "").lower() in SCRIPT_TYPES:
            self.elements.append(("script", attrs.get("nonce")))
        if tag == "style":
            self.elements.append(("style", attrs.get("nonce")))
        for name, value in attrs.items():
            if name == "style" or name.startswith("on"):
                self.attributes.append(f"<{tag} {name}={value!r}>")
            if name in ("href", "src", "action", "formaction") and (value or "").strip().lower().startswith("javascript:"):
                self.attributes.append(f"<{tag} {name}={value!r}>")


def assert_within_the_policy(response):
    path = response.request["PATH_INFO"]
    directives = policy(response)
    for directive in ("script-src", "style-src"):
        assert "'unsafe-eval'" not in directives[directive], path
    assert "'unsafe-inline'" not in directives["script-src"], path
    assert directives["object-src"] == ["'none'"] and directives["base-uri"] == ["'none'"], path
    assert directives["frame-ancestors"] == ["'none'"], path
    page = InlineCode()
    page.feed(response.content.decode())
    if path in INLINE_STYLES_ALLOWED:
        assert directives["style-src"] == ["'self'", "'unsafe-inline'"], path
        return
    assert "'unsafe-inline'" not in directives["style-src"], path
    assert page.attributes == [], f"{path}: {page.attributes}"
    for kind, nonce in page.elements:
        assert nonce and f"'nonce-{nonce}'" in directives[f"{kind}-src"], (
            f"{path}: an inline <{kind}> without this response's nonce"
        )


def everything() -> Targets:
    """The walk aimed at every object of the hidden walk's world, public and hidden alike."""
    world = build_world()
    return Targets(
        problems=list(Problem.objects.values_list("pk", flat=True)),
        kernels=list(Candidate.objects.values_list("pk", flat=True)),
        runs=list(OptimizationRun.objects.values_list("pk", flat=True)),
        reports=[world.report.pk],
        users=list(world.users.values()),
        arch=ARCH,
        other_arch=OTHER_ARCH,
    )


def walk(client: Client) -> list[str]:
    """GET every route (following redirects); check each HTML page; the paths checked."""
    checked = []
    for _route, url in http_paths(everything()):
        cache.clear()  # the throttles would answer 429 long before the walk ends
        response = client.get(url, follow=True)
        assert response.status_code < 500, (url, response.status_code)
        if response.headers.get("Content-Type", "").startswith("text/html"):
            assert_within_the_policy(response)
            checked.append(response.request["PATH_INFO"])
    return checked


def test_every_page_a_visitor_reaches_is_within_the_policy():
    checked = walk(Client())
    assert {"/", "/leaderboard/cpu/", "/problems/", "/accounts/login/", "/api/docs/", "/api/redoc/"} <= set(checked)


def test_every_page_staff_reach_is_within_the_policy_admin_included():
    client = Client()
    client.force_login(get_user_model().objects.create_user("chief", is_staff=True, is_superuser=True))
    checked = walk(client)
    assert {"/admin/", "/admin/kernels/candidate/", "/admin/kernels/evaluation/", "/admin/auth/user/add/"} <= set(checked)
    assert any(path.startswith("/admin/kernels/evaluation/") and path.endswith("/change/") for path in checked)


def test_each_response_gets_a_nonce_of_its_own():
    client = Client()
    first, second = (policy(client.get("/"))["script-src"] for _ in range(2))
    assert first != second
    assert [value for value in first if value.startswith("'nonce-")], first


def test_the_editor_bundle_is_handed_the_nonce_for_codemirrors_styles():
    response = Client().get("/")
    nonce = next(value for value in policy(response)["style-src"] if value.startswith("'nonce-"))[7:-1]
    assert f'editor.bundle.js" nonce="{nonce}"' in response.content.decode()


def test_swagger_ui_starts_from_a_script_of_the_site_not_an_inline_one():
    client = Client()
    page = client.get("/api/docs/")
    assert '<script src="/api/docs/?script="></script>' in page.content.decode()
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200 and script.headers["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in script.content.decode()


def test_a_missing_page_is_within_the_policy():
    response = Client().get("/no-such-page/")
    assert response.status_code == 404
    assert_within_the_policy(response)


def test_a_refused_form_is_within_the_policy():
    response = Client(enforce_csrf_checks=True).post("/accounts/login/", {"username": "ada", "password": "x"})
    assert response.status_code == 403
    assert "Form refused" in response.content.decode()
    assert_within_the_policy(response)


def failing_view(request):
    raise RuntimeError("a server error, on purpose")


urlpatterns = [path("fails/", failing_view)]


@pytest.mark.urls("tests.config.test_csp")
def test_a_server_error_is_within_the_policy():
    response = Client(raise_request_exception=False).get("/fails/")
    assert response.status_code == 500
    assert_within_the_policy(response)
