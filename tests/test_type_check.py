"""The apps type-check clean under the configuration of pyproject.toml ([tool.mypy], run by `make
lint`), and the check is not vacuous: a module with a type error, checked with the same
configuration, fails it. The harness (evaluation.harness) is held to --strict's flags: code that
basic checking lets through in a Django app fails it there. All reuse mypy's cache (var/mypy), so
only a cold run is slow."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# One worker runs both, one after the other: they share mypy's cache.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("mypy")]


def mypy(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), *arguments],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=540,
        env=env,
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


# Checked only in strict mode: a function without annotations (no-untyped-def). Basic checking leaves it
# unchecked and says nothing.
UNANNOTATED = "def scale(value, factor):\n    return value * factor\n"


def plant_as_module(root: Path, module: str, source: str) -> subprocess.CompletedProcess:
    """Checks `source` as the module `module` of this tree (evaluation.harness.planted, say), so that
    the configuration's per-module options for it apply, without writing into the tree: the file lies
    under `root`, named by its path from there (mypy's explicit package bases, with `root` on its path);
    its folders there hold no __init__.py, so the packages above it are the tree's own."""
    path = root.joinpath(*module.split(".")).with_suffix(".py")
    path.parent.mkdir(parents=True)
    path.write_text(source)
    return mypy("--explicit-package-bases", str(path), env={**os.environ, "MYPYPATH": str(root)})


def test_the_harness_is_checked_strictly(tmp_path):
    done = plant_as_module(tmp_path, "evaluation.harness.planted", UNANNOTATED)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "planted.py:1: error: Function is missing a type annotation  [no-untyped-def]" in done.stdout, done.stdout


def test_the_same_code_passes_basic_checking_in_an_app(tmp_path):
    done = plant_as_module(tmp_path, "court.planted", UNANNOTATED)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found in 1 source file" in done.stdout, done.stdout
