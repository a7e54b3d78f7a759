"""Every example in the README runs. Each of its shell blocks is either run here as it is written
(read from README.md, never copied) or named in ELSEWHERE with why the suite cannot run it and what
holds its behaviour instead; a new block that is neither fails the first test.

The API example runs against a live server: the browser tests' daphne in embedded mode, on the test
database with KernelBench's problems loaded, as `make run` serves it. Only the address changes: the
README's is `make run`'s, this server listens on a port of its own.
"""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import global_settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from court.models import Candidate, Evaluation, Problem
from evaluation.harness import HARNESS_VERSION
from tests.conftest import REPO
from tests.court.factories import make_candidate
from tests.e2e.conftest import _court_servers, court_server, static_root  # noqa: F401  (the real server, reused)
from tests.e2e.conftest import _database_url as database_url
from verification.models import GpuWorker

pytestmark = pytest.mark.django_db(transaction=True)

README = REPO / "README.md"
MAKE_RUN_ADDRESS = "http://127.0.0.1:8000"
BLOCK = re.compile(r"^(?P<indent> *)```sh\n(?P<body>.*?)^(?P=indent)```", re.MULTILINE | re.DOTALL)

# Blocks the suite cannot run, by their first line, and why.
ELSEWHERE = {
    "make run": "`make test` is the suite itself, and `make run` ends in a server that never returns; "
    "the server these tests start is the daphne command it ends with",
    "export DATABASE_URL=": "the long-running processes of a services deployment; tests/faults/platform.py starts "
    "them from this block, on a PostgreSQL and a Redis of their own, and every fault test verifies a candidate there",
    "CUDA_VISIBLE_DEVICES=0": "needs a GPU; the worker command itself: tests/verification/test_worker_process.py",
    "vllm serve": "needs a GPU and vLLM; the backend against an OpenAI-compatible server of the tests': "
    "tests/inference/test_vllm_backend.py",
}
# Blocks run here, by their first line.
RUN_HERE = {"COURT=http://127.0.0.1:8000", "python manage.py reverify --dry-run"}


def readme_blocks() -> dict[str, str]:
    """Each ```sh block of the README, its indentation removed, by its first line."""
    blocks = {}
    for match in BLOCK.finditer(README.read_text()):
        indent = len(match["indent"])
        body = "".join(line[indent:] for line in match["body"].splitlines(keepends=True))
        blocks[body.splitlines()[0]] = body
    return blocks


def block(first_line: str) -> str:
    (body,) = [body for line, body in readme_blocks().items() if line.startswith(first_line)]
    return body


def run_block(body: str, **env) -> subprocess.CompletedProcess:
    """The block in bash, failing at its first failing command, with this environment's Python first
    on the PATH (as `make run`'s .venv would be)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", body],
        cwd=REPO,
        env={**os.environ, "PATH": path, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_example_is_run_here_or_says_why_not():
    first_lines = list(readme_blocks())
    known = [*ELSEWHERE, *RUN_HERE]
    unknown = [line for line in first_lines if not any(line.startswith(prefix) for prefix in known)]
    stale = [prefix for prefix in known if not any(line.startswith(prefix) for line in first_lines)]
    assert not unknown, f"README blocks neither run by tests/test_readme.py nor named in ELSEWHERE: {unknown}"
    assert not stale, f"tests/test_readme.py names blocks the README no longer has: {stale}"


@pytest.fixture
def readme_site(request, settings):
    """`make run`'s site: KernelBench's problems, its CPU worker registered, and ada's account."""
    server = request.getfixturevalue("court_server")
    call_command("import_problems", REPO / "data" / "cuda-l1" / "h100.jsonl.gz", verbosity=0)
    # The server checks passwords with the site's own hashers, not the tests' MD5.
    settings.PASSWORD_HASHERS = global_settings.PASSWORD_HASHERS
    ada = get_user_model().objects.create_user("ada", password="ada-s-password-1")
    deadline = time.monotonic() + 60
    while "cpu" not in GpuWorker.objects.live_architectures():
        assert time.monotonic() < deadline, "the server's CPU worker did not register"
        time.sleep(0.5)
    return {"url": server, "ada": ada, "password": "ada-s-password-1"}


def test_the_api_example_runs_against_the_site(readme_site):
    site = readme_site
    body = block("COURT=http://127.0.0.1:8000")
    assert body.count(MAKE_RUN_ADDRESS) == 1  # the one address replaced below
    result = run_block(body.replace(MAKE_RUN_ADDRESS, site["url"]), PASSWORD=site["password"])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    # /api/ lists every resource (it listed only the runs).
    assert all(f'"{name}":' in result.stdout for name in ("problems", "candidates", "evaluations", "reports", "runs"))
    relu = Problem.objects.get(level=1, task=19)
    kernel = Candidate.objects.get(problem=relu, submitted_by=site["ada"])
    assert "def forward(self, x)" in kernel.code
    assert Evaluation.objects.filter(candidate=kernel, arch="cpu").exists()
    assert f'"candidate":{kernel.pk},"arch":"cpu"' in result.stdout
    # The export: one line per listed problem.
    assert result.stdout.count('{"level_id": ') == Problem.objects.listed().count() == 250


def test_the_reverify_example_runs(redis_url, tmp_path):
    """On the workers' broker (REDIS_URL), as the README says it needs, and the test database."""
    kernel = make_candidate(scale=4)
    Evaluation.objects.create(
        candidate=kernel, arch="h100", harness_version="0-old", status="verified", speedup_eager=2.0, finished_at=timezone.now()
    )
    body = block("python manage.py reverify --dry-run")
    result = run_block(body, DATABASE_URL=database_url(), REDIS_URL=redis_url, COURT_VAR_DIR=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"h100: 1 kernels would be enqueued (#{kernel.pk})" in result.stdout
    assert f"h100: 1 kernels enqueued (#{kernel.pk})" in result.stdout
    assert Evaluation.objects.get(candidate=kernel, harness_version=HARNESS_VERSION).arch == "h100"
