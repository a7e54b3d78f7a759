"""Settings come from the environment: embedded defaults, service switches, and loud failures."""

from tests.config.environments import PRODUCTION, STRONG_SECRET_KEY, load_settings, loaded


def test_nothing_set_means_embedded_sqlite_stub_broker_and_in_memory_layer(tmp_path):
    settings = loaded(tmp_path)
    assert settings["engine"] == "django.db.backends.sqlite3"
    assert settings["db_name"] == str(tmp_path / "var" / "db.sqlite3")
    assert settings["broker"] == "dramatiq.brokers.stub.StubBroker"
    assert settings["layer"] == "court.live.layers.ThreadSafeInMemoryChannelLayer"
    assert settings["debug"] is False
    assert settings["embedded_worker"] is True


def test_embedded_secret_key_is_generated_once_and_kept(tmp_path):
    loaded(tmp_path)
    key_file = tmp_path / "var" / "secret_key"
    first = key_file.read_text()
    loaded(tmp_path)
    assert key_file.read_text() == first
    assert len(first) >= 50
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"


def test_database_url_switches_to_postgresql(tmp_path):
    settings = loaded(tmp_path, DATABASE_URL="postgres://court:pw@db.example:5432/court")
    assert settings["engine"] == "django.db.backends.postgresql"
    assert settings["db_name"] == "court"


def test_redis_url_switches_broker_and_channel_layer_to_redis(tmp_path):
    settings = loaded(tmp_path, REDIS_URL="redis://cache.example:6379/2")
    assert settings["broker"] == "dramatiq.brokers.redis.RedisBroker"
    assert settings["broker_options"]["url"] == "redis://cache.example:6379/2"
    assert settings["layer"] == "channels_redis.pubsub.RedisPubSubChannelLayer"
    assert settings["layer_config"]["hosts"] == [{"address": "redis://cache.example:6379/2", "socket_connect_timeout": 5}]
    assert settings["layer_config"]["prefix"] == "court.db2."
    assert settings["embedded_worker"] is False


def test_debug_is_on_only_when_asked(tmp_path):
    assert loaded(tmp_path, DJANGO_DEBUG="true")["debug"] is True
    assert loaded(tmp_path, DJANGO_DEBUG="false")["debug"] is False


def test_production_web_without_secret_key_fails_at_start_with_a_clear_message(tmp_path):
    result = load_settings(tmp_path, **PRODUCTION)
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr
    assert not (tmp_path / "var" / "secret_key").exists()


def test_production_without_database_url_fails_at_start(tmp_path):
    variables = dict(PRODUCTION, SECRET_KEY=STRONG_SECRET_KEY)
    del variables["DATABASE_URL"]
    result = load_settings(tmp_path, **variables)
    assert result.returncode != 0
    assert "DATABASE_URL is not set" in result.stderr


def test_production_worker_runs_with_only_database_and_redis_urls(tmp_path):
    settings = loaded(tmp_path, COURT_ROLE="worker", **PRODUCTION)
    assert settings["engine"] == "django.db.backends.postgresql"
    assert settings["secret_len"] >= 50


def test_unknown_mode_is_refused(tmp_path):
    result = load_settings(tmp_path, COURT_MODE="prod")
    assert result.returncode != 0
    assert "COURT_MODE is 'prod'" in result.stderr


def test_harness_plan_and_limits_come_from_the_environment(tmp_path):
    settings = loaded(
        tmp_path,
        COURT_HARNESS_PLAN='{"timing_budget_s": 5, "trials": 3}',
        COURT_HARNESS_LIMITS='{"device_lock_path": "/run/court/gpu0.lock"}',
    )
    assert settings["harness_plan"] == {"timing_budget_s": 5, "trials": 3}
    assert settings["harness_limits"] == {"device_lock_path": "/run/court/gpu0.lock", "require_sandbox": False}
    assert loaded(tmp_path)["harness_plan"] == {}


def test_production_never_runs_user_code_without_the_sandbox(tmp_path):
    worker = dict(PRODUCTION, COURT_ROLE="worker")
    assert loaded(tmp_path, **worker)["harness_limits"]["require_sandbox"] is True
    refused = load_settings(tmp_path, **worker, COURT_REQUIRE_SANDBOX="false")
    assert refused.returncode != 0 and "never runs user code without the OS sandbox" in refused.stderr
    overridden = load_settings(tmp_path, **worker, COURT_HARNESS_LIMITS='{"require_sandbox": false}')
    assert overridden.returncode != 0 and "require_sandbox" in overridden.stderr


def test_a_misspelt_harness_field_stops_the_process_with_what_to_fix(tmp_path):
    result = load_settings(tmp_path, COURT_HARNESS_PLAN='{"timing_budget": 5}')
    assert result.returncode != 0
    assert "COURT_HARNESS_PLAN must be a JSON object of Plan fields" in result.stderr
    assert "timing_budget" in result.stderr and "timing_budget_s" in result.stderr
    result = load_settings(tmp_path, COURT_HARNESS_LIMITS="{not json")
    assert result.returncode != 0 and "COURT_HARNESS_LIMITS must be a JSON object" in result.stderr
