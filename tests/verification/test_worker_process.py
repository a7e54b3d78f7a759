"""Worker processes against the real Redis: a worker killed mid-job, and its job finished by another."""

import os
import signal
import subprocess
import sys
import time

import pytest
from django.db import connection

from court.models import Evaluation
from tests.conftest import REPO, unavailable
from tests.court.factories import make_candidate
from tests.e2e.conftest import _database_url
from verification.models import GpuWorker

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# The candidate is honest but slow, so the worker is surely mid-job when it is killed.
SLOW_CANDIDATE = """import time
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        time.sleep(0.05)
        return x * 7
"""


@pytest.fixture
def worker_process(redis_url, tmp_path):
    """Starts `verification_worker` processes that verify for real (the fast tier leaves these tests out)."""
    return lambda slot: start_worker(redis_url, slot, tmp_path)


def start_worker(redis_url: str, slot: str, tmp_path) -> subprocess.Popen:
    env = dict(
        os.environ,
        DATABASE_URL=_database_url(),
        REDIS_URL=redis_url,
        COURT_ROLE="worker",
        COURT_VAR_DIR=str(tmp_path / f"var-{slot}"),
        CUDA_VISIBLE_DEVICES="",
        # A killed worker's job is handed on after 2 s of silence; every broker call checks.
        COURT_BROKER_HEARTBEAT_TIMEOUT_MS="2000",
        COURT_BROKER_MAINTENANCE_CHANCE="1000000",
        DB_CONN_MAX_AGE="0",
    )
    log = open(tmp_path / f"worker-{slot}.log", "w")  # noqa: SIM115  (the worker writes it while it runs)
    return subprocess.Popen(
        [sys.executable, "manage.py", "verification_worker", "--arch", "cpu"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_until(condition, *, timeout: float, what: str, logs=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        connection.close()  # see the other processes' commits
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    details = "\n".join(path.read_text()[-2000:] for path in logs if path.exists())
    pytest.fail(f"timed out waiting for {what}\n{details}")


def test_a_worker_killed_mid_job_leads_to_a_retry_that_completes_once(worker_process, tmp_path, settings):
    if not settings.DRAMATIQ_BROKER["BROKER"].endswith("RedisBroker"):
        # Without REDIS_URL the suite's broker lives in this process, where no worker process sees a job.
        unavailable("a Redis broker for the suite (REDIS_URL is unset)")
    logs = [tmp_path / "worker-a.log", tmp_path / "worker-b.log"]
    first = worker_process("a")
    try:
        wait_until(lambda: GpuWorker.objects.live().filter(arch="cpu").exists(), timeout=60, what="worker a", logs=logs)
        candidate = make_candidate(scale=7, code=SLOW_CANDIDATE)
        evaluation = candidate.evaluations.get(arch="cpu")
        wait_until(
            lambda: Evaluation.objects.filter(pk=evaluation.pk, status="running").exists(),
            timeout=120,
            what="the job to start",
            logs=logs,
        )
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=10)

        second = worker_process("b")
        try:
            done = wait_until(
                lambda: Evaluation.objects.filter(pk=evaluation.pk).exclude(status__in=["queued", "running"]).first(),
                timeout=300,
                what="the retried job to finish",
                logs=logs,
            )
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(timeout=30)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    assert done.status == "verified", done.reason
    assert done.attempts == 2
    assert Evaluation.objects.filter(candidate=candidate).count() == 1
    assert GpuWorker.objects.get(name__endswith=":cpu:" + str(second.pid)).stopped_at is not None
