"""What a candidate's process can see and do: nothing of the host beyond what it needs, read-only;
no network, no secrets, no other process; and nothing of it alive once the verdict is out, or once
the harness's own process is killed. In CI these run as root, where harness 6's sandbox held nothing."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from evaluation.harness import sandbox, sandbox_command, sandbox_host
from tests.harness.conftest import REPO, SMALL_LIMITS, SMALL_PLAN, candidate, problem

confined = pytest.mark.skipif(
    not sandbox.confinement().confined and os.environ.get("CI") != "true",
    reason=f"no OS sandbox on this host: {sandbox.confinement().detail}",
)


def _escape_attempts(verdict) -> dict[str, str]:
    found = {}
    for line in verdict["log_excerpt"].splitlines():
        if line.startswith("ESCAPE ") and ": " in line:
            name, outcome = line[len("ESCAPE ") :].split(": ", 1)
            found[name] = outcome
    return found


@confined
def test_the_sandbox_is_bubblewrap_and_says_so(verifier):
    verdict = verifier("matmul", "honest_matmul")

    box = verdict["sandbox"]
    assert box["confined"] is True and box["tool"].startswith("bubblewrap")
    assert set(box["namespaces"]) >= {"user", "pid", "network", "ipc", "uts", "mount"}
    assert "no capabilities" in box["user"]


@confined
def test_a_candidate_running_as_root_reaches_nothing_of_the_host(verifier, monkeypatch):
    secret, planted = f"hunter2-{uuid.uuid4().hex}", f"kernel-court-planted-{uuid.uuid4().hex}"
    monkeypatch.setenv("SECRET_KEY", secret)
    source = (
        candidate("probe_escape")
        .replace('"/work/main"', repr(str(REPO)))
        .replace("SECRET_PLACEHOLDER", secret)
        .replace("TMP_PLACEHOLDER", planted)
    )

    verdict = verifier.verify_sources(problem("matmul"), source, device="cpu", plan=SMALL_PLAN, limits=SMALL_LIMITS)

    attempts = _escape_attempts(verdict)
    assert verdict["status"] == "verified", verdict["reason"]
    assert len(attempts) == 20, verdict["log_excerpt"]
    assert not (Path("/tmp") / planted).exists()
    assert [name for name, outcome in attempts.items() if not outcome.startswith("refused")] == []
    uid_line = next(line for line in verdict["log_excerpt"].splitlines() if line.startswith("ESCAPE uid"))
    assert uid_line.split()[2:] == ["65534", "caps", "0000000000000000", "no_new_privs", "1"]


@confined
def test_nothing_the_candidate_writes_reaches_the_harness_or_a_later_verification(verifier, tmp_path):
    cache = tmp_path / "builds"
    hostile = verifier("matmul", "probe_escape", limits={"build_cache_dir": str(cache)})
    later = verifier("matmul", "wrong_zeros", limits={"build_cache_dir": str(cache)})

    assert _escape_attempts(hostile)["write the harness's source"].startswith("refused")
    assert (REPO / "evaluation" / "harness" / "sandboxed" / "comparison.py").read_text().startswith('"""How far')
    assert later["status"] == "incorrect"
    # One folder per candidate source: a candidate writes its own build cache and no other.
    assert len([p for p in (cache / "candidates").iterdir() if p.is_dir()]) == 2


@confined
def test_bytecode_the_harness_compiled_is_read_only_to_the_sandbox(verifier, tmp_path, monkeypatch):
    package = tmp_path / "site" / "small_package"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 1\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(sandbox_host, "_ships_bytecode", lambda: False)  # as on a host whose torch has no bytecode
    monkeypatch.setattr(sandbox_host, "_bytecode_sources", lambda: [str(tmp_path / "site")])

    cache = sandbox.bytecode_cache()
    verdict = verifier("matmul", "probe_bytecode")

    assert list(cache.rglob("small_package/__init__.*.pyc")), list(cache.rglob("*"))
    assert sandbox.bytecode_cache() == cache  # compiled once
    line = next(line for line in verdict["log_excerpt"].splitlines() if line.startswith("BYTECODE"))
    assert line.split()[1] == sandbox.INSIDE_BYTECODE
    assert "refused" in line, line
    assert not list(cache.rglob("planted*"))


# The parent's secrets while the environment probe runs: its tests share one verdict.
SECRETS = {"DATABASE_URL": "postgres://court:hunter2@db/court", "SECRET_KEY": "hunter2-django-secret"}


def test_secrets_in_the_parents_environment_never_reach_the_candidate(verifier):
    verdict = verifier.shared("matmul", "probe_environment", environment=SECRETS)

    assert verdict["status"] == "verified", verdict["reason"]
    assert "ENVIRONMENT" in verdict["log_excerpt"]
    assert "hunter2" not in verdict["log_excerpt"]
    assert "DATABASE_URL" not in verdict["sandbox"]["environment"]


@confined
def test_candidate_works_in_a_private_home(verifier):
    verdict = verifier.shared("matmul", "probe_environment", environment=SECRETS)

    line = next(line for line in verdict["log_excerpt"].splitlines() if line.startswith("CWD"))
    _, cwd, _, home = line.split()
    assert cwd == home == "/work"


def test_candidate_cannot_reach_a_server_on_the_host(verifier):
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(25)
    port = server.getsockname()[1]
    accepted = []
    listener = threading.Thread(target=lambda: accepted.append(_accept(server)), daemon=True)
    listener.start()
    source = candidate("probe_network").replace("PORT_PLACEHOLDER", str(port))

    verdict = verifier.verify_sources(problem("matmul"), source, device="cpu", plan=SMALL_PLAN, limits=SMALL_LIMITS)

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


def test_candidate_cannot_read_the_reference_process(verifier):
    verdict = verifier("matmul", "probe_reference_process")

    assert "SNOOP done" in verdict["log_excerpt"]
    assert "read the reference process" not in verdict["log_excerpt"]
    assert verdict["sandbox"]["memory_readable_by_others"] is False


def _running_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _wait_until(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@confined
def test_nothing_of_the_sandbox_is_alive_after_the_verdict(verifier):
    marker = f"kernel-court-daemon-{uuid.uuid4().hex}"
    source = candidate("probe_daemon").replace("MARKER_PLACEHOLDER", marker)

    verdict = verifier.verify_sources(problem("matmul"), source, device="cpu", plan=SMALL_PLAN, limits=SMALL_LIMITS)

    assert verdict["sandbox"]["processes_left_running"] == 0
    assert _wait_until(lambda: not _running_with(marker), 5), f"a daemon of the candidate survived: {_running_with(marker)}"


@confined
def test_nothing_of_the_sandbox_survives_the_harness_being_killed_mid_call(sandboxed_harness, tmp_path):
    marker = f"kernel-court-orphan-{uuid.uuid4().hex}"
    (tmp_path / "candidate.py").write_text(candidate("probe_hang_forever").replace("MARKER_PLACEHOLDER", marker))
    (tmp_path / "problem.py").write_text(problem("matmul"))
    cli = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evaluation.harness",
            "verify",
            "--problem",
            str(tmp_path / "problem.py"),
            "--candidate",
            str(tmp_path / "candidate.py"),
            "--plan",
            json.dumps(SMALL_PLAN),
            "--limits",
            json.dumps(SMALL_LIMITS),
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert _wait_until(lambda: _running_with(marker), 120), "the candidate never started its child"
        cli.send_signal(signal.SIGKILL)
        cli.wait(timeout=10)
        assert _wait_until(lambda: not _running_with(marker), 10), f"still running: {_running_with(marker)}"
    finally:
        cli.kill()
        for pid in _running_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_without_the_sandbox_the_harness_refuses_unless_told_otherwise(verifier, monkeypatch):
    monkeypatch.setattr(sandbox_command, "_confinement", sandbox.Confinement(False, "", "bubblewrap is not installed"))

    refused = verifier("matmul", "honest_matmul", limits={"require_sandbox": True})
    allowed = verifier("matmul", "honest_matmul", limits={"require_sandbox": False})

    assert refused["status"] == "error" and "without the OS sandbox" in refused["reason"]
    assert allowed["status"] == "verified", allowed["reason"]
    assert allowed["sandbox"]["confined"] is False


def test_the_parent_never_imports_torch():
    """Problem and candidate code, and torch with them, run only in the sandboxed processes: the
    parent (the CLI, the worker's harness call) stays small and starts in a fraction of a second."""
    probe = "import sys, evaluation.harness.cli, evaluation.harness; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)

    assert done.stdout.strip() == "False"


@confined
def test_a_setuid_file_planted_in_the_build_cache_loses_its_bit_and_nobody_else_can_reach_it(verifier, tmp_path):
    verdict = verifier("matmul", "probe_setuid_in_cache", limits={"build_cache_dir": str(tmp_path / "builds")})

    assert "PLANTED 0o104755" in verdict["log_excerpt"], verdict["log_excerpt"]
    planted = list((tmp_path / "builds").rglob("planted-id"))
    assert planted and not planted[0].stat().st_mode & 0o6000
    for folder in [tmp_path / "builds", *(tmp_path / "builds").iterdir()]:
        assert folder.stat().st_mode & 0o077 == 0, oct(folder.stat().st_mode)


def test_a_rejected_run_leaves_no_baseline_timings_for_later_runs(verifier, tmp_path):
    verdict = verifier("matmul", "hack_background_thread", baselines=("eager", "compile"), baseline_cache_dir=str(tmp_path))

    assert verdict["status"] == "rejected"
    assert not list(tmp_path.glob("baselines-*.json"))


@confined
def test_a_forked_process_is_confined_exactly_as_one_started_by_exec(verifier, monkeypatch):
    """The fork server's processes (fork_server.py) against bubblewrap's own: the same user,
    capabilities, limits, environment, descriptors, mounts, namespaces and interpreter flags; the
    forked one's sandbox holds one more process, its holder."""
    seen = {}
    for mode in ("0", "1"):
        monkeypatch.setenv("KERNEL_COURT_FORK_SERVER", mode)
        verdict = verifier("matmul", "probe_confinement")
        assert verdict["status"] == "verified", verdict["reason"]
        assert ("forked from the harness's fork server" in verdict["sandbox"]["process"]) == (mode == "1")
        lines = [line.split(" ", 2) for line in verdict["log_excerpt"].splitlines() if line.startswith("CONFINEMENT ")]
        seen[mode] = {name: json.loads(value) for _, name, value in lines}
    assert len(seen["0"]) == 16, verdict["log_excerpt"]
    assert seen["1"].pop("processes") == seen["0"].pop("processes") + 1
    # Both in a new session without a terminal: bubblewrap's made by its init, the forked one's its own.
    assert (seen["0"].pop("session_leader"), seen["1"].pop("session_leader")) == (False, True)
    # bubblewrap leaves the three capabilities root needed to become uid 65534 in the inheritable and
    # bounding sets (none effective or permitted); the forked process drops them from every set.
    forked_status, exec_status = dict(seen["1"].pop("status")), dict(seen["0"].pop("status"))
    assert {name: forked_status[name] for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")} == dict.fromkeys(
        ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"), "\t0000000000000000"
    )
    assert {k: v for k, v in forked_status.items() if not k.startswith("Cap")} == {
        k: v for k, v in exec_status.items() if not k.startswith("Cap")
    }
    assert forked_status["NoNewPrivs"] == "\t1" and forked_status["Uid"].split() == ["65534"] * 4
    for key in seen["0"]:
        assert seen["1"][key] == seen["0"][key], key
    assert seen["1"]["dumpable"] == 0


@confined
def test_the_fork_server_outlives_the_thread_that_started_it(verifier):
    # A worker's verifications run in its threads and share its servers: a server tied to the thread
    # that started it (PR_SET_PDEATHSIG follows threads) would take every process forked from it
    # down when that thread ended, in the middle of other verifications.
    verdicts = []
    starter = threading.Thread(target=lambda: verdicts.append(verifier("matmul", "honest_matmul")))
    starter.start()
    starter.join()
    time.sleep(1)

    assert verdicts[0]["status"] == "verified", verdicts[0]["reason"]
    assert "forked from the harness's fork server" in verdicts[0]["sandbox"]["process"]
    assert sandbox._servers and all(server.alive() for server in sandbox._servers.values())
