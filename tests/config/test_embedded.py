"""The embedded mode's workers start in the web process, as `make run` starts them, saying nothing
alarming: their start-up log is what an operator reads first."""

import pytest

from tests.config.environments import run_with_settings

# The site's workers in a process of their own, started and stopped: left out of the fast tier.
pytestmark = [pytest.mark.server, pytest.mark.slow]

START = """
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from config.embedded import start_embedded_worker, stop_embedded_worker
start_embedded_worker()
stop_embedded_worker()
"""


def test_the_embedded_workers_start_without_a_warning(tmp_path):
    # Two dramatiq workers share the in-process broker by design (run loops must never take the
    # threads that make their verdicts); dramatiq warned of "a middleware of the same type twice".
    started = run_with_settings(tmp_path, ["-c", START], DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")

    assert started.returncode == 0, started.stderr[-3000:]
    assert "embedded workers started" in started.stderr
    assert "WARNING" not in started.stderr, started.stderr[-3000:]
