"""A pasted module is user code: everywhere it runs (the builtin optimizer's analysis, the reference,
the baselines) it runs in the OS sandbox. Harness 6's analysis imported it in the inference worker,
where a paste calling `os.system` at import wrote a file as root on the host and reached the server."""

import socket
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.urls import reverse

from court.models import Evaluation, OptimizationRun
from evaluation.harness import sandbox

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASTE = """
import os
import socket

import torch
import torch.nn as nn

os.system("touch {planted}")
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
except OSError:
    pass


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


batch_size = 16
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
"""


class Listener:
    """A server on the host's loopback that counts who connects."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.accepted = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopping.is_set():
            try:
                connection, _ = self.server.accept()
            except OSError:
                continue
            self.accepted += 1
            connection.close()

    def close(self):
        self.stopping.set()
        self.thread.join(timeout=5)
        self.server.close()


@pytest.mark.skipif(not sandbox.confinement().confined, reason="no OS sandbox on this host")
def test_a_paste_that_runs_commands_and_opens_sockets_at_import_does_nothing_on_the_host(client, cpu_worker, inference_worker):
    planted = Path(f"/tmp/kernel-court-pasted-{uuid.uuid4().hex}")
    listener = Listener()
    try:
        response = client.post(
            reverse("inference:demo"),
            {"source": PASTE.format(planted=planted, port=listener.port), "backend": "builtin", "max_rounds": 1},
        )
        assert response.status_code == 302, response.content.decode()[:2000]
        run = OptimizationRun.objects.latest("pk")
        deadline = time.monotonic() + 600
        while not run.is_finished and time.monotonic() < deadline:
            time.sleep(0.5)
            run.refresh_from_db()
        pending = Evaluation.objects.filter(candidate__run=run).exclude(stage="done")
        while pending.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        listener.close()

    assert run.is_finished, f"run {run.pk} still {run.status}"
    evaluations = list(Evaluation.objects.filter(candidate__run=run))
    assert evaluations, "the paste was never verified, so its module never ran where it could have done harm"
    assert all(e.verdict.get("sandbox", {}).get("confined") for e in evaluations)
    # The module ran at import in the analysis, the reference and the baselines, and did nothing here.
    assert not planted.exists()
    assert listener.accepted == 0
