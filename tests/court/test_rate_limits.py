"""Every costly or sensitive page counts against the API's rates: 429, a message and Retry-After past them."""

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from court.models import HackReport, OptimizationRun
from tests.api.conftest import client_for
from tests.court.factories import PROBLEM_SOURCE, make_candidate

pytestmark = pytest.mark.django_db


def start_run(client, scale=7, **extra):
    body = {"source": PROBLEM_SOURCE.format(scale=scale), "backend": "builtin", "max_rounds": 1}
    return client.post("/", body, **extra)


def assert_refused(response, counted: str):
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert f"Too many {counted}".encode() in response.content and b"Try again in" in response.content


def test_demo_and_api_runs_spend_one_budget(client, rate):
    rate("runs")
    ada = get_user_model().objects.create_user("ada")
    client.force_login(ada)
    assert start_run(client).status_code == 302
    problem, api = OptimizationRun.objects.get().problem_id, client_for(ada)
    assert api.post("/api/runs/", {"problem": problem}, format="json").status_code == 201
    assert_refused(start_run(client), "runs started")
    assert api.post("/api/runs/", {"problem": problem}, format="json").status_code == 429
    assert OptimizationRun.objects.count() == 2


def test_anonymous_demo_runs_are_counted_per_address(rate):
    rate("runs")
    here, elsewhere = Client(REMOTE_ADDR="203.0.113.7"), Client(REMOTE_ADDR="198.51.100.2")
    assert [start_run(here, scale).status_code for scale in (2, 3)] == [302, 302]
    assert_refused(start_run(here, 4), "runs started")
    assert start_run(elsewhere, 5).status_code == 302
    assert OptimizationRun.objects.count() == 3


def test_a_client_cannot_choose_its_address_with_x_forwarded_for(client, rate):
    rate("runs")
    codes = [start_run(client, scale, HTTP_X_FORWARDED_FOR=f"10.0.0.{scale}").status_code for scale in (2, 3, 4)]
    assert codes == [302, 302, 429]


def test_reports_from_the_page_and_the_api_spend_one_budget(client, rate):
    rate("reports")
    kernel = make_candidate(scale=2)
    reporter = get_user_model().objects.create_user("reporter")
    client.force_login(reporter)
    report = {"category": "caching", "text": "Returns the first output forever."}
    assert client.post(f"/kernels/{kernel.pk}/report/", report).status_code == 302
    api = client_for(reporter)
    assert api.post("/api/reports/", {"kernel": kernel.pk, **report}, format="json").status_code == 201
    assert_refused(client.post(f"/kernels/{kernel.pk}/report/", report), "hack reports filed")
    assert HackReport.objects.count() == 2


def test_password_guesses_cost_the_same_on_every_log_in_form(client, rate, django_user_model):
    django_user_model.objects.create_user("ada", password="kernel-court-pw-9")
    rate("login", "3/min")
    wrong = {"username": "ada", "password": "guess"}
    assert client.post("/accounts/login/", wrong).status_code == 200
    assert client.post("/admin/login/", wrong).status_code == 200
    assert client_for().post("/api/token/", wrong).status_code == 400
    right = {"username": "ada", "password": "kernel-court-pw-9"}
    assert_refused(client.post("/accounts/login/", right), "log-in attempts")
    assert_refused(client.post("/admin/login/", right), "log-in attempts")
    refused = client_for().post("/api/token/", right)
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "_auth_user_id" not in client.session


def test_guesses_at_one_account_are_counted_whatever_the_address(rate, django_user_model):
    django_user_model.objects.create_user("ada", password="kernel-court-pw-9")
    rate("login_account", "3/hour")
    for address in ("203.0.113.1", "203.0.113.2", "203.0.113.3"):
        assert Client(REMOTE_ADDR=address).post("/accounts/login/", {"username": "ada", "password": "guess"}).status_code == 200
    refused = Client(REMOTE_ADDR="203.0.113.4").post("/accounts/login/", {"username": "ADA ", "password": "guess"})
    assert_refused(refused, "log-in attempts for this account")
    other = Client(REMOTE_ADDR="203.0.113.4").post("/accounts/login/", {"username": "bob", "password": "guess"})
    assert other.status_code == 200


def test_sign_ups_are_counted_per_address(rate, django_user_model):
    rate("accounts")
    here = Client(REMOTE_ADDR="203.0.113.7")

    def sign_up(client, name):
        return client.post(
            "/accounts/signup/",
            {
                "username": name,
                "email": f"{name}@example.org",
                "password1": "kernel-court-pw-9",
                "password2": "kernel-court-pw-9",
            },
        )

    assert [sign_up(here, name).status_code for name in ("ada", "bob")] == [302, 302]
    assert_refused(sign_up(here, "eve"), "sign-ups and password-reset mails")
    assert sign_up(Client(REMOTE_ADDR="198.51.100.2"), "cy").status_code == 302
    assert sorted(django_user_model.objects.values_list("username", flat=True)) == ["ada", "bob", "cy"]


def test_password_reset_mails_are_counted_per_address(client, rate, django_user_model):
    django_user_model.objects.create_user("ada", email="ada@example.org", password="kernel-court-pw-9")
    rate("accounts")
    codes = [client.post("/accounts/password_reset/", {"email": "ada@example.org"}).status_code for _ in range(2)]
    assert codes == [302, 302]
    assert_refused(client.post("/accounts/password_reset/", {"email": "ada@example.org"}), "sign-ups and password-reset mails")
    assert len(mail.outbox) == 2


def test_pages_are_read_without_counting(client, rate):
    rate("runs", "1/hour")
    assert [client.get("/").status_code for _ in range(3)] == [200, 200, 200]
    assert start_run(client).status_code == 302


def test_runs_started_at_once_do_not_pass_the_limit_together(rate, django_user_model):
    """Thirty requests arriving together each read the count before any writes it: the limit holds."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from rest_framework.test import APIRequestFactory

    from court.rate_limits import Throttle

    rate("runs", "20/hour")
    request = APIRequestFactory().post("/api/runs/")
    request.user = django_user_model.objects.create_user("ada")
    arrived = Barrier(30)

    def start(_) -> bool:
        throttle = Throttle("runs")
        arrived.wait()
        return throttle.allow_request(request, None)

    with ThreadPoolExecutor(30) as pool:
        accepted = sum(pool.map(start, range(30)))

    assert accepted == 20
    late = Throttle("runs")
    assert not late.allow_request(request, None)
    assert 3500 < late.wait() <= 3600


def test_api_tokens_created_or_replaced_are_counted_per_user(rate, django_user_model):
    rate("tokens")
    ada, bob = Client(), Client()
    ada.force_login(django_user_model.objects.create_user("ada"))
    bob.force_login(django_user_model.objects.create_user("bob"))
    assert [ada.post("/accounts/token/").status_code for _ in range(2)] == [200, 200]
    assert_refused(ada.post("/accounts/token/"), "API tokens created or replaced")
    assert ada.post("/accounts/token/delete/").status_code == 302
    assert bob.post("/accounts/token/").status_code == 200
