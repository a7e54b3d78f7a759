"""Settings loaded in a process of their own from a given environment, as a deployment would start.

The variables the settings read are taken out of the test's own environment first, so a developer's
shell (or CI's) cannot decide what a test sees.
"""

import json
import os
import secrets
import subprocess
import sys

from tests.conftest import REPO

PROBE = """
import json
from django.conf import settings
print(json.dumps({
    "engine": settings.DATABASES["default"]["ENGINE"],
    "db_name": str(settings.DATABASES["default"]["NAME"]),
    "broker": settings.DRAMATIQ_BROKER["BROKER"],
    "broker_options": settings.DRAMATIQ_BROKER["OPTIONS"],
    "layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
    "layer_config": settings.CHANNEL_LAYERS["default"].get("CONFIG", {}),
    "debug": settings.DEBUG,
    "embedded_worker": settings.EMBEDDED_WORKER,
    "secret_len": len(settings.SECRET_KEY),
    "harness_plan": settings.EVALUATION_HARNESS_PLAN,
    "harness_limits": settings.EVALUATION_HARNESS_LIMITS,
    "ssl_redirect": settings.SECURE_SSL_REDIRECT,
    "hsts_seconds": settings.SECURE_HSTS_SECONDS,
    "hsts_subdomains": settings.SECURE_HSTS_INCLUDE_SUBDOMAINS,
    "hsts_preload": settings.SECURE_HSTS_PRELOAD,
    "session_cookie_secure": settings.SESSION_COOKIE_SECURE,
    "csrf_cookie_secure": settings.CSRF_COOKIE_SECURE,
    "proxy_ssl_header": settings.SECURE_PROXY_SSL_HEADER,
    "num_proxies": settings.REST_FRAMEWORK["NUM_PROXIES"],
    "x_frame_options": settings.X_FRAME_OPTIONS,
    "referrer_policy": settings.SECURE_REFERRER_POLICY,
    "nosniff": settings.SECURE_CONTENT_TYPE_NOSNIFF,
}))
"""

_READ_BY_SETTINGS = ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "LOG_LEVEL")
_READ_BY_SETTINGS_PREFIXES = ("COURT_", "DJANGO_", "SECURE_", "INFERENCE_")

# A web process's environment in production mode, less its secret.
PRODUCTION = {
    "COURT_MODE": "production",
    "DATABASE_URL": "postgres://court@db:5432/court",
    "REDIS_URL": "redis://redis:6379/0",
    "ALLOWED_HOSTS": "court.example",
}
STRONG_SECRET_KEY = secrets.token_urlsafe(50)
# What deploy/env.example asks for: a real secret, behind one TLS-terminating proxy.
GOOD_PRODUCTION = {**PRODUCTION, "SECRET_KEY": STRONG_SECRET_KEY, "COURT_TRUSTED_PROXIES": "1"}


def run_with_settings(tmp_path, args: list[str], **variables) -> subprocess.CompletedProcess:
    """`python ARGS` in the repository with only these of the settings' variables set."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in _READ_BY_SETTINGS and not key.startswith(_READ_BY_SETTINGS_PREFIXES)
    }
    env.update(DJANGO_SETTINGS_MODULE="config.settings", COURT_VAR_DIR=str(tmp_path / "var"), **variables)
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def load_settings(tmp_path, **variables) -> subprocess.CompletedProcess:
    return run_with_settings(tmp_path, ["-c", PROBE], **variables)


def loaded(tmp_path, **variables) -> dict:
    result = load_settings(tmp_path, **variables)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def refused(tmp_path, **variables) -> str:
    """The settings refuse to load: the process fails with ImproperlyConfigured; its message."""
    result = load_settings(tmp_path, **variables)
    assert result.returncode != 0, f"the settings loaded: {result.stdout}"
    assert "django.core.exceptions.ImproperlyConfigured" in result.stderr, result.stderr
    return result.stderr.strip().splitlines()[-1]
