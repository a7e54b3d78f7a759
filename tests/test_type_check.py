"""The apps type-check clean under the configuration of pyproject.toml ([tool.mypy], run by `make
lint`), and the check is not vacuous: a module with a type error, checked with the same
configuration, fails it. Both reuse mypy's cache (var/mypy), so only a cold run is slow."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# One worker runs both, one after the other: they share mypy's cache.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("mypy")]


def mypy(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), *arguments],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=540,
    )


def test_the_apps_type_check_clean():
    done = mypy()

    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout


def test_a_type_error_fails_the_check(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from court.models import Problem\n\n\n"
        "def problem_size(problem: Problem) -> int:\n"
        "    return problem.source  # a TextField: a str, as the Django plugin reads the model\n"
    )

    done = mypy(str(planted))

    assert done.returncode == 1, done.stdout + done.stderr
    assert 'planted.py:5: error: Incompatible return value type (got "str", expected "int")' in done.stdout, done.stdout
