"""What a candidate's process can see: no secrets, no network where the host allows a namespace,
no other process's memory, and a private home."""

import socket
import subprocess
import sys
import threading

import pytest

from evaluation import harness
from tests.harness.conftest import REPO, SMALL_LIMITS, SMALL_PLAN, candidate, problem, verify


def test_secrets_in_the_parents_environment_never_reach_the_candidate(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://arena:hunter2@db/arena")
    monkeypatch.setenv("SECRET_KEY", "hunter2-django-secret")

    verdict = verify("matmul", "probe_environment")

    assert verdict["status"] == "verified", verdict["reason"]
    assert "ENVIRONMENT" in verdict["log_excerpt"]
    assert "hunter2" not in verdict["log_excerpt"]
    assert "DATABASE_URL" not in verdict["sandbox"]["environment"]


def test_candidate_works_in_a_private_home():
    verdict = verify("matmul", "probe_environment")

    line = next(line for line in verdict["log_excerpt"].splitlines() if line.startswith("CWD"))
    _, cwd, _, home = line.split()
    assert cwd == home and "kernel-arena-run-" in cwd


def test_candidate_cannot_reach_a_server_on_the_host():
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(25)
    port = server.getsockname()[1]
    accepted = []
    listener = threading.Thread(target=lambda: accepted.append(_accept(server)), daemon=True)
    listener.start()
    source = candidate("probe_network").replace("PORT_PLACEHOLDER", str(port))

    verdict = harness.verify(problem("matmul"), source, device="cpu", plan=SMALL_PLAN, limits=SMALL_LIMITS)

    server.close()
    if verdict["sandbox"]["network"].startswith("host network"):
        pytest.skip(f"this host permits no network namespace: {verdict['sandbox']['network']}")
    assert "NETWORK unreachable" in verdict["log_excerpt"]
    assert accepted in ([], [None])


def _accept(server):
    try:
        return server.accept()
    except OSError:
        return None


def test_candidate_cannot_read_the_reference_process():
    verdict = verify("matmul", "probe_reference_process")

    assert "SNOOP done" in verdict["log_excerpt"]
    assert "read the reference process" not in verdict["log_excerpt"]
    assert verdict["sandbox"]["memory_readable_by_others"] is False


def test_the_parent_never_imports_torch():
    """Problem and candidate code, and torch with them, run only in the sandboxed processes: the
    parent (the CLI, the worker's harness call) stays small and starts in a fraction of a second."""
    probe = "import sys, evaluation.harness.cli, evaluation.harness; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)

    assert done.stdout.strip() == "False"
