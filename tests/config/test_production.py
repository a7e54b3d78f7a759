"""Production mode refuses every unsafe setting at start, each with what to set, and serves HTTPS only.

Each test starts the settings (or manage.py) in a process of its own with a given environment, as a
deployment would.
"""

import json
import re

import pytest

from tests.config.environments import GOOD_PRODUCTION, PRODUCTION, loaded, refused, run_with_settings
from tests.conftest import REPO


def test_a_good_production_environment_serves_https_only(tmp_path):
    settings = loaded(tmp_path, **GOOD_PRODUCTION)
    assert settings["debug"] is False
    assert settings["ssl_redirect"] is True
    assert settings["hsts_seconds"] == 365 * 24 * 3600
    assert settings["hsts_subdomains"] is True
    assert settings["hsts_preload"] is False
    assert settings["session_cookie_secure"] is True
    assert settings["csrf_cookie_secure"] is True
    assert settings["proxy_ssl_header"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert settings["num_proxies"] == 1
    assert settings["x_frame_options"] == "DENY"
    assert settings["referrer_policy"] == "same-origin"
    assert settings["nosniff"] is True


def test_embedded_mode_stays_plain_http_on_this_machine(tmp_path):
    settings = loaded(tmp_path)
    assert settings["ssl_redirect"] is False
    assert settings["hsts_seconds"] == 0
    assert settings["session_cookie_secure"] is False
    assert settings["csrf_cookie_secure"] is False
    assert settings["proxy_ssl_header"] is None
    assert loaded(tmp_path, DJANGO_DEBUG="true")["debug"] is True


def test_debug_is_refused_in_the_web_process_and_in_workers(tmp_path):
    message = refused(tmp_path, **GOOD_PRODUCTION, DJANGO_DEBUG="true")
    assert "DJANGO_DEBUG is on: production mode never shows debug pages" in message
    worker = dict(PRODUCTION, COURT_ROLE="worker", DJANGO_DEBUG="true")
    assert "DJANGO_DEBUG is on" in refused(tmp_path, **worker)


def test_the_example_secret_key_is_refused(tmp_path):
    example = (REPO / "deploy" / "env.example").read_text()
    key = re.search(r"^SECRET_KEY=(.*)$", example, re.MULTILINE).group(1)
    message = refused(tmp_path, **dict(GOOD_PRODUCTION, SECRET_KEY=key))
    assert "SECRET_KEY is the example value from deploy/env.example" in message
    assert "secrets.token_urlsafe(50)" in message


@pytest.mark.parametrize(
    ("key", "weakness"),
    [
        ("s3cr3t-but-short", "is 16 characters long, fewer than 50"),
        ("abab" * 20, "has 2 distinct characters, fewer than 5"),
        ("django-insecure-" + "k3y0f4d3v3l0pm3ntpr0j3ct-n0t-f0r-pr0duct10n-us3", "is one of Django's generated development keys"),
    ],
    ids=["short", "few-distinct-characters", "django-insecure"],
)
def test_a_weak_secret_key_is_refused(tmp_path, key, weakness):
    assert f"SECRET_KEY {weakness}" in refused(tmp_path, **dict(GOOD_PRODUCTION, SECRET_KEY=key))


def test_no_allowed_hosts_is_refused(tmp_path):
    variables = dict(GOOD_PRODUCTION)
    del variables["ALLOWED_HOSTS"]
    assert "ALLOWED_HOSTS is not set" in refused(tmp_path, **variables)


def test_a_wildcard_allowed_host_is_refused(tmp_path):
    message = refused(tmp_path, **dict(GOOD_PRODUCTION, ALLOWED_HOSTS="court.example,*"))
    assert "ALLOWED_HOSTS contains '*'" in message


def test_a_proxy_ssl_header_without_a_trusted_proxy_is_refused(tmp_path):
    variables = dict(GOOD_PRODUCTION, SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https")
    del variables["COURT_TRUSTED_PROXIES"]
    message = refused(tmp_path, **variables)
    assert "SECURE_PROXY_SSL_HEADER is set but COURT_TRUSTED_PROXIES is 0" in message
    assert "any client could send that header and pass as HTTPS" in message


def test_a_malformed_proxy_ssl_header_is_refused(tmp_path):
    message = refused(tmp_path, **dict(GOOD_PRODUCTION, SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto"))
    assert "give the header as Django names it and the value that means HTTPS" in message


def test_a_proxy_of_ours_may_name_its_own_https_header(tmp_path):
    settings = loaded(tmp_path, **dict(GOOD_PRODUCTION, SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_SSL,on"))
    assert settings["proxy_ssl_header"] == ["HTTP_X_FORWARDED_SSL", "on"]


def test_without_a_trusted_proxy_no_forwarded_header_is_believed(tmp_path):
    variables = dict(GOOD_PRODUCTION)
    del variables["COURT_TRUSTED_PROXIES"]
    settings = loaded(tmp_path, **variables)
    assert settings["proxy_ssl_header"] is None
    assert settings["num_proxies"] == 0
    assert settings["ssl_redirect"] is True


def test_hsts_turned_off_is_refused(tmp_path):
    message = refused(tmp_path, **dict(GOOD_PRODUCTION, SECURE_HSTS_SECONDS="0"))
    assert "SECURE_HSTS_SECONDS is 0" in message and "positive number of seconds" in message


def test_manage_py_check_deploy_is_clean_in_a_good_production_environment(tmp_path):
    result = run_with_settings(tmp_path, ["manage.py", "check", "--deploy", "--fail-level", "WARNING"], **GOOD_PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    # One: security.W021, the HSTS preload reminder, silenced while preloading is not asked for.
    assert "System check identified no issues (1 silenced)." in result.stdout


def test_manage_py_check_deploy_is_clean_with_hsts_preload_asked_for(tmp_path):
    variables = dict(GOOD_PRODUCTION, SECURE_HSTS_PRELOAD="true")
    result = run_with_settings(tmp_path, ["manage.py", "check", "--deploy", "--fail-level", "WARNING"], **variables)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


# A route that answers without the database or the static files' manifest, neither of which this
# process has: the API's 404 (the site's 404 page lists the boards and names its stylesheet).
HTTP_PROBE = """
import django, json
django.setup()
from django.test import Client
client = Client(HTTP_HOST="court.example")
plain = client.get("/api/no-such-page/")
forwarded = client.get("/api/no-such-page/", headers={"X-Forwarded-Proto": "https"})
print(json.dumps({
    "plain": [plain.status_code, plain.headers.get("Location")],
    "forwarded": [forwarded.status_code, forwarded.headers.get("Location"), forwarded.headers.get("Strict-Transport-Security")],
}))
"""


def http_answers(tmp_path, **variables) -> dict:
    result = run_with_settings(tmp_path, ["-c", HTTP_PROBE], **variables)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_plain_http_is_redirected_and_https_through_our_proxy_gets_hsts(tmp_path):
    answers = http_answers(tmp_path, **GOOD_PRODUCTION)
    assert answers["plain"] == [301, "https://court.example/api/no-such-page/"]
    assert answers["forwarded"] == [404, None, "max-age=31536000; includeSubDomains"]


def test_a_client_claiming_https_is_not_believed_without_a_proxy_of_ours(tmp_path):
    variables = dict(GOOD_PRODUCTION)
    del variables["COURT_TRUSTED_PROXIES"]
    answers = http_answers(tmp_path, **variables)
    assert answers["forwarded"][:2] == [301, "https://court.example/api/no-such-page/"]
