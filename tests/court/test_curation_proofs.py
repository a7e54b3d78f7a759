"""A hack report with proof inputs is checked by the harness; a kernel it breaks goes under review
without any staff action, and every outcome is in the audit log.

The whole path runs for real: the report is filed through the API, the proof check is enqueued by
signal on the kernel's architecture, this process's cpu worker runs the harness (sandboxed, on the
CPU) with the reporter's inputs, and the verdict decides the kernel's curation.
"""

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from court.models import AuditEntry, Evaluation, HackReport, Problem, ProofCheck
from court.source import normalized_source_hash
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import make_candidate

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# The batch is fixed, as in some KernelBench tasks, so a kernel that caches its result per input
# shape passes every check the harness makes on its own: only other inputs expose it.
PROBLEM = '''import torch
import torch.nn as nn

class Model(nn.Module):
    """A linear layer on a fixed batch."""
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        return self.linear(x)

def get_inputs():
    return [torch.linspace(-1, 1, 16).reshape(2, 8)]

def get_init_inputs():
    return []
'''

CACHING = """import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.results = {}

    def forward(self, x):
        if x.shape not in self.results:
            self.results[x.shape] = self.linear(x)
        return self.results[x.shape].clone()
"""

HONEST = """import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        return self.linear(x)
"""

RANDOM_BATCH = """import torch

def get_inputs():
    return [torch.randn(2, 8)]
"""

PROOF_THAT_RAISES = """def get_inputs():
    raise RuntimeError("no inputs today")
"""


def planted_kernel(code: str):
    """A listed kernel with a verified cpu evaluation, made before the worker registers (so saving
    it enqueues nothing of its own)."""
    problem = Problem.objects.create(
        title="Linear on a fixed batch", source=PROBLEM, normalized_hash=normalized_source_hash(PROBLEM)
    )
    kernel = make_candidate(problem=problem, code=code)
    Evaluation.objects.create(
        candidate=kernel,
        arch="cpu",
        harness_version=HARNESS_VERSION,
        status="verified",
        speedup_eager=4.0,
        finished_at=timezone.now(),
    )
    return kernel


@pytest.fixture
def kernel(request):
    return planted_kernel(request.param)


@pytest.fixture
def worker(kernel, cpu_worker):
    """The cpu worker, registered only once the kernel exists: the proof check is its one job."""
    return cpu_worker


@pytest.fixture
def reporter():
    client = APIClient()
    client.force_authenticate(get_user_model().objects.create_user("reporter", "reporter@example.org", "pw-reporter-1"))
    return client


@pytest.fixture
def curator():
    return get_user_model().objects.create_user("curator", "curator@example.org", "pw-curator-1", is_staff=True)


def report_with_proof(client, kernel, proof: str, broker) -> ProofCheck:
    """File a report through the API and wait for the worker to check its proof."""
    response = client.post(
        "/api/reports/",
        {
            "kernel": kernel.pk,
            "category": "caching",
            "text": "Returns the first batch's result for any batch.",
            "proof_code": proof,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    broker.join("gpu.cpu", timeout=300_000)
    return ProofCheck.objects.get(report_id=response.json()["id"], arch="cpu")


@pytest.mark.parametrize("kernel", [CACHING], indirect=True)
def test_a_proof_that_breaks_a_caching_kernel_puts_it_under_review(kernel, worker, reporter, curator, broker):
    check = report_with_proof(reporter, kernel, RANDOM_BATCH, broker)
    kernel.refresh_from_db()
    assert check.status == "breaks" and "on the hack report's proof inputs the candidate is wrong" in check.reason
    assert kernel.curation == "under_review" and kernel.curated_by is None
    assert f"Hack report {check.report_id}" in kernel.curation_reason
    assert AuditEntry.objects.filter(
        actor=None, action="kernel under_review", target_type="candidate", target_id=kernel.pk
    ).exists()
    assert AuditEntry.objects.filter(actor=None, action="proof check breaks", target_id=check.report_id).exists()
    assert [message.to for message in mail.outbox] == [[curator.email]]
    assert reporter.get("/api/leaderboard/cpu/").json()["rows"] == []


@pytest.mark.parametrize("kernel", [HONEST], indirect=True)
def test_a_kernel_that_holds_on_the_proof_stays_listed(kernel, worker, reporter, curator, broker):
    check = report_with_proof(reporter, kernel, RANDOM_BATCH, broker)
    kernel.refresh_from_db()
    assert check.status == "holds", check.reason
    assert kernel.curation == "listed" and mail.outbox == []
    assert [row["kernel"] for row in reporter.get("/api/leaderboard/cpu/").json()["rows"]] == [kernel.pk]


@pytest.mark.parametrize("kernel", [CACHING], indirect=True)
def test_a_proof_that_fails_on_its_own_does_not_delist_the_kernel(kernel, worker, reporter, curator, broker):
    check = report_with_proof(reporter, kernel, PROOF_THAT_RAISES, broker)
    kernel.refresh_from_db()
    assert check.status == "failed" and "no inputs today" in check.reason
    assert kernel.curation == "listed"
    assert AuditEntry.objects.filter(actor=None, action="proof check failed", target_id=check.report_id).exists()
    assert "could not be checked" in mail.outbox[0].subject


def test_a_report_without_proof_is_left_to_staff(reporter):
    kernel = planted_kernel(CACHING)
    response = reporter.post("/api/reports/", {"kernel": kernel.pk, "category": "caching", "text": "caches"}, format="json")
    assert response.json()["proof_checks"] == [] and not ProofCheck.objects.exists()
    assert HackReport.objects.get().status == "open"


@pytest.mark.parametrize("kernel", [CACHING], indirect=True)
def test_a_check_that_keeps_failing_on_our_side_ends_failed_not_queued(kernel, worker, curator, monkeypatch):
    """The harness itself breaking (a sandbox that cannot start) on the last try is recorded and
    told to staff; the check does not stay queued for ever and the kernel stays listed."""
    from verification import actors, jobs

    def sandbox_cannot_start(*args, **kwargs):
        raise OSError("cannot fork the sandbox")

    monkeypatch.setattr(jobs.harness, "verify", sandbox_cannot_start)
    report = HackReport.objects.create(candidate=kernel, category="caching", text="caches", proof_code=RANDOM_BATCH)
    check = ProofCheck.objects.create(report=report, arch="cpu")
    with pytest.raises(OSError):
        actors.check_proof.fn(check.pk)  # outside a worker's retries: as on the last try
    check.refresh_from_db()
    kernel.refresh_from_db()
    assert check.status == "failed" and "on our side" in check.reason and "cannot fork" not in check.reason
    assert "cannot fork the sandbox" in check.verdict["error_detail"]  # staff's alone
    assert kernel.curation == "listed"
    assert "could not be checked" in mail.outbox[0].subject and "cannot fork the sandbox" in mail.outbox[0].body
