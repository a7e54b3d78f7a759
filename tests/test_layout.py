"""The repository's top level must not break Python: no folder shadows a standard library module
(the deployment folder was once `platform/`), and the harness needs no Django."""

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
