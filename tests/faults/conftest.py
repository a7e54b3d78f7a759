import os
from functools import partial

import pytest

from tests.conftest import unavailable
from tests.faults.platform import (
    Platform,
    PostgresServer,
    RedisServer,
    _free_port,
    prepare_template,
    process_env,
    scenario,
    start_services,
    wait_until,
)

TEMPLATE = "court_template"


@pytest.fixture(scope="session")
def fault_postgres():
    if not PostgresServer.available() or not RedisServer.available():
        unavailable("PostgreSQL's and Redis's server programs (initdb, pg_ctl, redis-server)")
    server = PostgresServer()
    server.init()
    yield server
    server.remove()


@pytest.fixture(scope="session")
def fault_seed(fault_postgres):
    env = {key: value for key, value in os.environ.items() if not key.startswith(("COURT_", "REDIS_URL"))}
    return prepare_template(fault_postgres, TEMPLATE, env)


@pytest.fixture
def court_platform(fault_postgres, fault_seed, tmp_path, request):
    """Starts the platform, on a fresh copy of the template database and a fresh Redis, for a model
    that answers with `code`; stops every process at the end."""
    started = []

    def start(*, code: str, **stream) -> Platform:
        database = f"faults_{os.getpid()}_{len(started)}_{abs(hash(request.node.nodeid)) % 10**6}"
        fault_postgres.execute(f'CREATE DATABASE "{database}" TEMPLATE "{TEMPLATE}"')
        redis = RedisServer(tmp_path)
        redis.start()
        model = scenario(tmp_path, code=code, **stream)
        web_port = _free_port()
        env = process_env(
            database_url=fault_postgres.url(database),
            redis_url=redis.url,
            model=model,
            tmp=tmp_path,
            static_root=tmp_path / "static",
        )
        platform = Platform(fault_postgres, redis, database, web_port, fault_seed["token"], fault_seed["problem"])
        started.append((platform, model))
        platform.services = start_services(env, tmp_path, web_port)
        platform.wait_until(lambda: platform.api("GET", "/api/runs/").status_code == 200, timeout=90, what="the web process")
        platform.wait_until(
            lambda: platform.rows("SELECT 1 FROM evaluation_gpuworker WHERE arch = 'cpu' AND stopped_at IS NULL"),
            timeout=90,
            what="the verification worker to register",
        )
        return platform

    yield start
    for platform, model in started:
        for service in platform.services.values():
            service.stop()
        model.stop()
        platform.redis.stop()
        wait_until(partial(_dropped, fault_postgres, platform.database), timeout=30, what="the test's database to be dropped")


def _dropped(postgres: PostgresServer, database: str) -> bool:
    postgres.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    return True
