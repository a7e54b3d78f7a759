"""The repository's top level must not break Python: `platform/` is no package, the harness needs no Django."""

import subprocess
import sys

from tests.conftest import REPO


def _run_in_repo_root(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True, timeout=120)
    return result.stdout.strip()


def test_platform_module_is_the_standard_library_one_from_the_repository_root():
    assert (REPO / "platform").is_dir(), "the deployment folder this test guards against is missing"
    out = _run_in_repo_root(
        "import platform, sysconfig; print(platform.system()); "
        "print(platform.__file__.startswith(sysconfig.get_paths()['stdlib']))"
    )
    assert out.splitlines() == ["Linux", "True"]


def test_importing_the_harness_imports_no_django_module():
    out = _run_in_repo_root(
        "import sys, evaluation.harness; print(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')))"
    )
    assert out == "[]"
