"""The repository's top level must not break Python: no folder shadows a standard library module
(the deployment folder was once `platform/`), and the harness needs no Django. No module grows past
what a reader takes in (the harness's pipeline had reached 1,511 lines in one class)."""

import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.conftest import REPO


def _run_in_repo_root(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True, timeout=120)
    return result.stdout.strip()


def test_no_top_level_folder_shadows_a_standard_library_module():
    standard = {path.stem for path in Path(sysconfig.get_paths()["stdlib"]).iterdir()} | set(sys.builtin_module_names)
    shadowing = sorted(entry.name for entry in REPO.iterdir() if entry.is_dir() and entry.name in standard)
    assert shadowing == [], f"{shadowing} would be imported instead of the standard library's module from the repository root"


def test_importing_the_harness_imports_no_django_module():
    out = _run_in_repo_root(
        "import sys, evaluation.harness; print(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')))"
    )
    assert out == "[]"


# Issue 34: past this a module mixes roles; split it by role, as pipeline.py and leaderboard.py were.
MOST_LINES = 700


def test_no_module_of_the_packages_is_over_the_most_lines():
    packages = ("evaluation", "court", "verification", "inference", "jobrows", "config")
    long = {
        str(path.relative_to(REPO)): lines
        for package in packages
        for path in (REPO / package).rglob("*.py")
        if "migrations" not in path.parts and (lines := len(path.read_text().splitlines())) > MOST_LINES
    }
    assert long == {}, f"over {MOST_LINES} lines: {long}"
