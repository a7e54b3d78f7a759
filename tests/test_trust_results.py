"""The trust report's plugin (tests/trust_results.py) in runs of its own, as the suite runs (pytest-xdist
workers, a subset deselected by a mark): it fails a run where a family names a test that failed in it
or does not exist, never for one the run left out, and keeps each test's last result in its file."""

import json
import os
import subprocess
import sys

from tests.conftest import REPO

CONFTEST = """
import json, os
from pathlib import Path
from tests.trust_results import TrustResults

def pytest_configure(config):
    named = json.loads(os.environ["NAMED"])
    config.pluginmanager.register(TrustResults(named, Path(os.environ["TRUST_RESULTS"])), "trust_results")
"""

TESTS = """
import pytest

def test_passes():
    pass

def test_fails():
    assert False

@pytest.mark.parametrize("x", ["a", "b"])
def test_param(x):
    pass

@pytest.mark.slow
def test_left_out():
    pass
"""


def run(tmp_path, named: list[str], *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: left out by -m\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_some.py").write_text(TESTS)
    # The outer run's xdist worker is not the inner run's.
    outer = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}
    env = dict(
        outer,
        NAMED=json.dumps(named),
        TRUST_RESULTS=str(tmp_path / "results.json"),
        PYTHONPATH=str(REPO),
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    command = [sys.executable, "-m", "pytest", "-p", "xdist.plugin", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def results(tmp_path) -> dict:
    return {test: entry["outcome"] for test, entry in json.loads((tmp_path / "results.json").read_text())["tests"].items()}


def test_a_named_test_that_failed_or_does_not_exist_fails_the_run_under_xdist(tmp_path):
    named = [
        "test_some.py::test_passes",
        "test_some.py::test_fails",
        "test_some.py::test_param[a]",
        "test_some.py::test_param[c]",
        "test_some.py::test_renamed",
        "test_gone.py::test_passes",
        "test_some.py::test_left_out",
    ]

    finished = run(tmp_path, named, "-n", "2", "-m", "not slow")

    summary = finished.stdout[finished.stdout.index("trust report") :]
    assert finished.returncode == 1, finished.stdout
    assert "test_some.py::test_fails: failed in this run" in summary
    assert "test_some.py::test_param[c]: does not exist" in summary
    assert "test_some.py::test_renamed: does not exist" in summary
    assert "test_gone.py::test_passes: does not exist" in summary
    assert "test_passes: " not in summary.replace("test_gone.py::test_passes", "")
    assert "test_left_out" not in summary
    assert results(tmp_path) == {
        "test_some.py::test_passes": "passed",
        "test_some.py::test_fails": "failed",
        "test_some.py::test_param[a]": "passed",
    }


def test_a_subset_run_passes_and_keeps_the_last_result_of_what_it_left_out(tmp_path):
    earlier = {
        "written_at": "2026-01-01T00:00:00+00:00",
        "tests": {"test_some.py::test_left_out": {"outcome": "passed", "at": "x"}},
    }
    (tmp_path / "results.json").write_text(json.dumps(earlier))
    # A parametrization that is not there cannot be told from one the arguments left out: judged by its file.
    named = ["test_some.py::test_passes", "test_some.py::test_left_out", "test_some.py::test_param[c]"]

    finished = run(tmp_path, named, "-m", "not slow", "test_some.py::test_passes")

    assert finished.returncode == 0, finished.stdout
    assert "trust report" not in finished.stdout
    assert results(tmp_path) == {"test_some.py::test_passes": "passed", "test_some.py::test_left_out": "passed"}
    assert json.loads((tmp_path / "results.json").read_text())["tests"]["test_some.py::test_left_out"]["at"] == "x"
