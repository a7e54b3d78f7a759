"""Kernel Court's settings, read from the environment in this one place.

With nothing set, the platform runs embedded: SQLite under var/, an in-process Dramatiq broker
whose worker threads live in the web process, the in-memory channel layer, the builtin
optimizer and CPU evaluation. `DATABASE_URL` switches to PostgreSQL; `REDIS_URL` switches both
the Dramatiq broker and the Channels layer to Redis. `COURT_MODE=production` makes a missing or
example secret, debug pages, a wildcard host or a believed-but-untrusted proxy header a start-up
error instead of a default, and serves HTTPS only (redirect, HSTS, secure cookies). Every mode sends
a Content Security Policy.
"""

import secrets
from pathlib import Path

import environ
from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from redis.connection import parse_url

# The harness's settings types: standard library only, no Django, no torch.
from evaluation.harness.limits import Limits, Plan, coerce

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()

VAR_DIR = Path(env.str("COURT_VAR_DIR", default=str(BASE_DIR / "var")))

MODE = env.str("COURT_MODE", default="embedded")
if MODE not in ("embedded", "production"):
    raise ImproperlyConfigured(f"COURT_MODE is {MODE!r}: set it to 'embedded' or 'production'.")
PRODUCTION = MODE == "production"

# A worker process (GPU or CPU) signs nothing, so it runs with a database and a Redis URL only.
ROLE = env.str("COURT_ROLE", default="web")
if ROLE not in ("web", "worker"):
    raise ImproperlyConfigured(f"COURT_ROLE is {ROLE!r}: set it to 'web' or 'worker'.")

DEBUG = env.bool("DJANGO_DEBUG", default=False)
# Debug pages show settings, code and queries to whoever triggers an error, and a debug process keeps
# every SQL query it ran in memory: a worker too.
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DJANGO_DEBUG is on: production mode never shows debug pages; unset it or set it to false.")


def _embedded_secret_key():
    """A key generated once per checkout, so embedded sessions survive a restart."""
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


_NEW_SECRET_KEY = "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
# Placeholders the repository itself shows (deploy/env.example): a copied example is no secret.
EXAMPLE_SECRET_KEYS = frozenset({"change-me-to-a-long-random-string"})


def secret_key_weakness(key: str) -> str:
    """Why a key cannot sign production's sessions, or "" when it can. The thresholds are Django's own
    (security.W009), so a key accepted here passes `manage.py check --deploy`."""
    if key in EXAMPLE_SECRET_KEYS:
        return "is the example value from deploy/env.example"
    if key.startswith("django-insecure-"):
        return "is one of Django's generated development keys (django-insecure-...)"
    if len(key) < 50:
        return f"is {len(key)} characters long, fewer than 50"
    if len(set(key)) < 5:
        return f"has {len(set(key))} distinct characters, fewer than 5"
    return ""


SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if PRODUCTION and ROLE == "web":
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. In production mode the web process needs a long random "
            f"SECRET_KEY in its environment (for example: {_NEW_SECRET_KEY})."
        )
    SECRET_KEY = secrets.token_urlsafe(50) if ROLE == "worker" else _embedded_secret_key()
elif PRODUCTION and ROLE == "web" and (weakness := secret_key_weakness(SECRET_KEY)):
    raise ImproperlyConfigured(
        f"SECRET_KEY {weakness}: production mode signs sessions and password resets with it. "
        f"Set a long random one (for example: {_NEW_SECRET_KEY})."
    )

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=[] if PRODUCTION else ["127.0.0.1", "localhost", "[::1]"])
if PRODUCTION and ROLE == "web" and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS is not set: list the host names the site answers to.")
if PRODUCTION and ROLE == "web" and "*" in ALLOWED_HOSTS:
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS contains '*': production mode answers only to its own host names (a forged Host "
        "header would otherwise reach password-reset links and absolute URLs); list them, e.g. court.example.org."
    )
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
# How many reverse proxies of ours stand in front of the web process, each appending the client's
# address to X-Forwarded-For and setting X-Forwarded-Proto. With 0 neither header is believed: a
# client could otherwise pick its own address (rate limits) and claim HTTPS.
TRUSTED_PROXIES = env.int("COURT_TRUSTED_PROXIES", default=0)
# The header that says a request reached our proxy over HTTPS: X-Forwarded-Proto unless the proxy
# uses another (SECURE_PROXY_SSL_HEADER=HTTP_X_FORWARDED_SSL,on). Believed only behind a proxy of ours,
# which must set it on every request, overwriting what the client sent.
_proxy_ssl_header = env.list("SECURE_PROXY_SSL_HEADER", default=[])
if _proxy_ssl_header and not TRUSTED_PROXIES:
    raise ImproperlyConfigured(
        "SECURE_PROXY_SSL_HEADER is set but COURT_TRUSTED_PROXIES is 0: without a proxy of ours in front, "
        "any client could send that header and pass as HTTPS. Set COURT_TRUSTED_PROXIES to the number of "
        "proxies that set it, or unset SECURE_PROXY_SSL_HEADER."
    )
if _proxy_ssl_header and (len(_proxy_ssl_header) != 2 or not _proxy_ssl_header[0].startswith("HTTP_")):
    raise ImproperlyConfigured(
        f"SECURE_PROXY_SSL_HEADER is {','.join(_proxy_ssl_header)!r}: give the header as Django names it and "
        "the value that means HTTPS, e.g. HTTP_X_FORWARDED_PROTO,https."
    )
if TRUSTED_PROXIES:
    SECURE_PROXY_SSL_HEADER = tuple(_proxy_ssl_header or ("HTTP_X_FORWARDED_PROTO", "https"))

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "django_dramatiq",
    "csp",
    "jobrows",
    "court",
    "verification",
    "inference",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # CSP_NONCE: this response's nonce, for the rare element that needs one.
                "csp.context_processors.nonce",
            ],
        },
    },
]

# SQLite gets WAL and an immediate write lock so the web process's worker threads and its
# requests do not trip over "database is locked".
_SQLITE_OPTIONS = {
    "timeout": 30,
    "transaction_mode": "IMMEDIATE",
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}
DATABASE_URL = env.str("DATABASE_URL", default="")
if PRODUCTION and not DATABASE_URL:
    raise ImproperlyConfigured(
        "DATABASE_URL is not set: production mode runs on PostgreSQL (postgres://user:password@host:5432/name)."
    )
if DATABASE_URL:
    DATABASES = {"default": env.db_url_config(DATABASE_URL)}
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=60))
    DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
    if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
        DATABASES["default"].setdefault("OPTIONS", {}).update(_SQLITE_OPTIONS)
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "db.sqlite3",
            "OPTIONS": _SQLITE_OPTIONS,
            # A file, not memory, so that worker processes started by the tests share it.
            "TEST": {"NAME": VAR_DIR / "test-db.sqlite3"},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Where mails and exports point readers to; and who is told when a proof puts a kernel under review.
SITE_URL = env.str("SITE_URL", default="http://127.0.0.1:8000").rstrip("/")
ADMINS = [tuple(entry.split(":", 1)) for entry in env.list("COURT_ADMINS", default=[])]
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = SERVER_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="kernel-court@localhost")

LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env.str("COURT_STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Redis carries both the Dramatiq broker and the Channels layer; without it both stay in-process.
REDIS_URL = env.str("REDIS_URL", default="")
if PRODUCTION and not REDIS_URL:
    raise ImproperlyConfigured(
        "REDIS_URL is not set: production mode needs Redis for the job broker and the WebSocket layer (redis://host:6379/0)."
    )
EMBEDDED_WORKER = env.bool("COURT_EMBEDDED_WORKER", default=not REDIS_URL)


def redis_database(url: str) -> int:
    return int(parse_url(url).get("db", 0))


CHANNEL_REDIS_OPTIONS = {"socket_connect_timeout": 5}

_DRAMATIQ_MIDDLEWARE = [
    "dramatiq.middleware.AgeLimit",
    "dramatiq.middleware.TimeLimit",
    "dramatiq.middleware.Callbacks",
    "dramatiq.middleware.Retries",
    "dramatiq.middleware.CurrentMessage",
    "django_dramatiq.middleware.DbConnectionsMiddleware",
]
if REDIS_URL:
    DRAMATIQ_BROKER = {
        "BROKER": "dramatiq.brokers.redis.RedisBroker",
        "OPTIONS": {
            "url": REDIS_URL,
            # A job held by a worker that stopped beating this long ago is handed to another.
            "heartbeat_timeout": env.int("COURT_BROKER_HEARTBEAT_TIMEOUT_MS", default=60_000),
            # Dramatiq checks for such jobs on a random share of broker commands (per million);
            # its default (0.1%) can leave a dead worker's job waiting for many minutes when idle.
            "maintenance_chance": env.int("COURT_BROKER_MAINTENANCE_CHANCE", default=20_000),
        },
        "MIDDLEWARE": _DRAMATIQ_MIDDLEWARE,
    }
    # The Pub/Sub layer: a web process receives its pages' messages as Redis pushes them. The
    # queue-based RedisChannelLayer makes four round trips to Redis per message received, and one
    # daphne process fell seconds behind at 1000 messages a second (benchmarks/RESULTS.md,
    # streaming latency); it also drops messages silently past its capacity, which is per web
    # process, not per page. Pub/Sub keeps nothing in Redis: a message sent while a process is
    # not subscribed (reconnecting) is lost, and run pages fill such gaps from the stored
    # transcript by sequence number (inference.consumers).
    #
    # Pub/Sub channels belong to the server, not to a database: a platform on database 2 would hear
    # the groups of another on database 3 (or of another test worker) as its own, `run.7` being
    # a different run in each. The database's number in every name keeps them apart.
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, **CHANNEL_REDIS_OPTIONS}],
                "prefix": f"court.db{redis_database(REDIS_URL)}.",
            },
        }
    }
else:
    DRAMATIQ_BROKER = {
        "BROKER": "dramatiq.brokers.stub.StubBroker",
        "OPTIONS": {},
        "MIDDLEWARE": _DRAMATIQ_MIDDLEWARE,
    }
    CHANNEL_LAYERS = {"default": {"BACKEND": "court.live.layers.ThreadSafeInMemoryChannelLayer", "CONFIG": {"capacity": 2000}}}
DRAMATIQ_AUTODISCOVER_MODULES = ["actors"]
# Supervision (jobrows.liveness): every worker process and run loop records that it is alive
# this often, and one silent for six beats is taken for dead, its jobs sent again by the reconciler.
LIVENESS_HEARTBEAT_S = env.float("COURT_HEARTBEAT_S", default=10.0)
# Threads for run loops in embedded mode; evaluations there take one thread of their own.
EMBEDDED_WORKER_THREADS = env.int("COURT_EMBEDDED_WORKER_THREADS", default=4)

# Evaluation workers: which architecture key a worker claims ("" detects it from the device),
# the baselines each candidate is timed against, and how long one job may take (a cold GPU job
# builds a CUDA extension and times four baselines).
WORKER_ARCH = env.str("COURT_WORKER_ARCH", default="")
EVALUATION_BASELINES_GPU = env.list("COURT_BASELINES_GPU", default=["eager", "compile", "compile-ro", "cudagraph"])
EVALUATION_BASELINES_CPU = env.list("COURT_BASELINES_CPU", default=["eager"])
EVALUATION_TIME_LIMIT_MS = env.int("COURT_EVALUATION_TIME_LIMIT_S", default=1800) * 1000
BASELINE_CACHE_DIR = env.str("COURT_BASELINE_CACHE_DIR", default=str(VAR_DIR / "baselines"))
# A worker probes its device (evaluation.harness.probe: a KernelBench problem's own Model against eager,
# with the A/A control kept as the device's) after every this many evaluations, and after each while
# the device lacks its controls or last read off 1.0; 0: never (embedded mode's default: the CPU demo
# judges each verdict by its own control).
DEVICE_PROBE_EVERY = env.int("COURT_DEVICE_PROBE_EVERY", default=20 if PRODUCTION else 0)
# The trust report's evidence: the last outcomes of the tests its hack families name, written by the
# test suite (tests/trust_results.py) where TRUST_RESULTS says, else in the checkout's var/.
TRUST_RESULTS = env.str("TRUST_RESULTS", default=str(BASE_DIR / "var" / "trust-results.json"))


def _harness_setting(name: str, kind) -> dict:
    """A JSON object of the harness's Plan or Limits fields to change, checked when settings load."""
    try:
        value = env.json(name, default={})
        coerce(kind, value)
    except (TypeError, ValueError) as exc:
        raise ImproperlyConfigured(
            f"{name} must be a JSON object of {kind.__name__} fields "
            f"(evaluation/harness/limits.py), e.g. '{{\"timing_budget_s\": 5}}': {exc}"
        ) from exc
    return value


# How thoroughly this worker checks and times (Plan) and what one verification may spend (Limits),
# as the fields to change from the harness's defaults: e.g. COURT_HARNESS_PLAN='{"timing_budget_s": 5}',
# COURT_HARNESS_LIMITS='{"device_lock_path": "/run/court/gpu0.lock"}'.
EVALUATION_HARNESS_PLAN = _harness_setting("COURT_HARNESS_PLAN", Plan)
# User code (candidates, pasted problems, proofs, the builtin optimizer's analysis) runs in the OS
# sandbox (bubblewrap). Production refuses to run it without one; embedded mode may fall back to an
# unconfined run, which the run page and every verdict then say.
SANDBOX_REQUIRED = env.bool("COURT_REQUIRE_SANDBOX", default=PRODUCTION)
if PRODUCTION and not SANDBOX_REQUIRED:
    raise ImproperlyConfigured(
        "COURT_REQUIRE_SANDBOX is false: production mode never runs user code without the OS "
        "sandbox; install bubblewrap on the worker instead."
    )
EVALUATION_HARNESS_LIMITS = {"require_sandbox": SANDBOX_REQUIRED, **_harness_setting("COURT_HARNESS_LIMITS", Limits)}
if PRODUCTION and EVALUATION_HARNESS_LIMITS.get("require_sandbox") is False:
    raise ImproperlyConfigured(
        "COURT_HARNESS_LIMITS sets require_sandbox to false: production mode never runs user code without the OS sandbox."
    )

# Run loops: how long a round waits for its verdicts before it goes on without them, and how
# long a whole run may take.
INFERENCE_VERDICT_WAIT_S = env.int("COURT_VERDICT_WAIT_S", default=900)
INFERENCE_RUN_TIME_LIMIT_MS = env.int("COURT_RUN_TIME_LIMIT_S", default=3 * 3600) * 1000

# The catalogue the run command loads, and the limits on what a person may paste.
PROBLEM_SOURCE_MAX_BYTES = env.int("COURT_PROBLEM_MAX_BYTES", default=64 * 1024)
CANDIDATE_SOURCE_MAX_BYTES = env.int("COURT_CANDIDATE_MAX_BYTES", default=256 * 1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    # Reads; the scopes below are applied by each entry point (court.rate_limits), pages and API alike.
    "DEFAULT_THROTTLE_CLASSES": ["court.rate_limits.AnonThrottle", "court.rate_limits.UserThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env.str("COURT_THROTTLE_ANON", default="120/min"),
        "user": env.str("COURT_THROTTLE_USER", default="600/min"),
        # Starting runs and submitting candidates costs GPU time: stricter, per user or address.
        "runs": env.str("COURT_THROTTLE_RUNS", default="20/hour"),
        "submissions": env.str("COURT_THROTTLE_SUBMISSIONS", default="60/hour"),
        "reports": env.str("COURT_THROTTLE_REPORTS", default="30/hour"),
        # Password guessing: per address, and per account named whatever the address.
        "login": env.str("COURT_THROTTLE_LOGIN", default="10/min"),
        "login_account": env.str("COURT_THROTTLE_LOGIN_ACCOUNT", default="30/hour"),
        # New accounts and password-reset mails, per address.
        "accounts": env.str("COURT_THROTTLE_ACCOUNTS", default="5/hour"),
        # API tokens issued from the token page, per user.
        "tokens": env.str("COURT_THROTTLE_TOKENS", default="10/hour"),
    },
    # The client's address is the last one our own proxies appended to X-Forwarded-For; with none
    # (0), the connection's peer address, so a client cannot choose the address it is counted as.
    "NUM_PROXIES": TRUSTED_PROXIES,
    "DEFAULT_FILTER_BACKENDS": [
        "court.api.filters.FilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "court.api.pagination.Pages",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "court.api.schema.CourtAutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Kernel Court API",
    "DESCRIPTION": "Problems, runs, candidates, evaluations, the leaderboard and hack reports. "
    "Writes need a token (Authorization: Token <key>); a run's live stream is its WebSocket.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # The API takes JSON (DRF's browsable pages also post forms, which the schema leaves out);
    # /api/token/ documents the form encoding beside it (court.accounts.TokenView).
    "PARSER_WHITELIST": ["rest_framework.parsers.JSONParser"],
}

# Throttling counts requests in the cache: Redis when there is one, so all web processes share it.
# Short socket timeouts: when Redis is away, a read goes on unlimited after at most a second, not
# after the operating system's TCP timeout (court.rate_limits).
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }
    if REDIS_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "kernel-court"}
}

# Every page, in every mode: scripts and styles come from the site's own files, or carry the
# response's nonce (CodeMirror's style elements); nothing inline otherwise, no plugins, no framing,
# and requests (fetch, WebSockets) to the site itself only. Pages that need more widen it for
# themselves (config/urls.py, the API's docs). django-csp adds the nonce to the header only on
# responses that used it.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, NONCE],
        "img-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# Production is served over HTTPS only: by a TLS-terminating proxy of ours (COURT_TRUSTED_PROXIES)
# or by daphne itself. Embedded mode stays plain HTTP on 127.0.0.1.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if PRODUCTION:
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    # A year by default; a first deployment may start lower while it checks HTTPS everywhere.
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=365 * 24 * 3600)
    if SECURE_HSTS_SECONDS <= 0:
        raise ImproperlyConfigured(
            f"SECURE_HSTS_SECONDS is {SECURE_HSTS_SECONDS}: production mode tells browsers to use HTTPS only; "
            "set it to a positive number of seconds (31536000, a year, by default)."
        )
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
    # Preloading binds the whole registrable domain into browsers for months, which only its owner can
    # decide (https://hstspreload.org): off unless asked, and Django's reminder to ask (W021) silenced.
    SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
    if not SECURE_HSTS_PRELOAD:
        SILENCED_SYSTEM_CHECKS = ["security.W021"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"django.request": {"level": "WARNING"}},
}

# Inference backends
# The vLLM (or other OpenAI-compatible) server the "vllm" backend streams from; empty hides that
# backend. An empty model name means the one model the server serves. Timeouts: connect is per
# attempt (retried INFERENCE_CONNECT_RETRIES times); read is the longest silence between two
# streamed chunks, not a limit on the whole answer, since reasoning models think for minutes.
INFERENCE_VLLM_URL = env.str("INFERENCE_VLLM_URL", default="")
INFERENCE_VLLM_MODEL = env.str("INFERENCE_VLLM_MODEL", default="")
INFERENCE_VLLM_API_KEY = env.str("INFERENCE_VLLM_API_KEY", default="")
INFERENCE_TEMPERATURE = env.float("INFERENCE_TEMPERATURE", default=0.6)
INFERENCE_TOP_P = env.float("INFERENCE_TOP_P", default=0.95)
INFERENCE_MAX_TOKENS = env.int("INFERENCE_MAX_TOKENS", default=16384)
INFERENCE_CONNECT_TIMEOUT_S = env.float("INFERENCE_CONNECT_TIMEOUT_S", default=10.0)
INFERENCE_READ_TIMEOUT_S = env.float("INFERENCE_READ_TIMEOUT_S", default=300.0)
INFERENCE_CONNECT_RETRIES = env.int("INFERENCE_CONNECT_RETRIES", default=2)
# The builtin optimizer analyses the problem in a child process; this bounds that process.
INFERENCE_BUILTIN_ANALYSIS_TIMEOUT_S = env.float("INFERENCE_BUILTIN_ANALYSIS_TIMEOUT_S", default=60.0)
