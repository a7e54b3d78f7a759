"""Staff decide a hack report in the admin with the kernel before them (its code, verdicts and flags,
and the proof's checks), and cannot decide while the proof is still being checked (issue 18)."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from court.models import AuditEntry, HackReport, ProofCheck
from tests.court.factories import make_candidate, make_evaluation

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    client.force_login(get_user_model().objects.create_superuser("staff", "staff@example.org", "pw-staff-123"))
    return client


@pytest.fixture
def report():
    kernel = make_candidate(scale=7)
    make_evaluation(kernel, arch="cpu", speedup_eager=3.25, flags=["same_kernels_as_reference", "host_bound"])
    report = HackReport.objects.create(candidate=kernel, category="caching", text="caches", proof_code="def get_inputs(): ...")
    ProofCheck.objects.create(report=report, arch="cpu")
    return report


def change_page(report) -> str:
    return reverse("admin:kernels_hackreport_change", args=[report.pk])


def decide(staff_client, report, **decision):
    form = {
        "candidate": report.candidate_id,
        "category": report.category,
        "text": report.text,
        "proof_code": report.proof_code,
        "status": "open",
        "resolution": "",
        **decision,
    }
    return staff_client.post(change_page(report), form, follow=True)


def test_the_report_shows_the_kernels_code_verdicts_and_flags(staff_client, report):
    page = staff_client.get(change_page(report)).content.decode()
    assert 'x</span> <span class="o">*</span> <span class="mi">7</span>' in page  # the code, highlighted
    assert "cpu · harness" in page and "at 3.25x: same_kernels_as_reference, host_bound" in page
    assert "cpu: <strong>Queued</strong>" in page and "no decision can be taken until its verdict is in" in page


def test_a_decision_while_the_proof_is_checked_is_refused_with_the_reason(staff_client, report):
    response = decide(staff_client, report, status="rejected")
    assert "still being checked on cpu" in response.content.decode()
    report.refresh_from_db()
    assert report.status == "open" and not AuditEntry.objects.exists()


def test_the_actions_refuse_it_too(staff_client, report):
    url = reverse("admin:kernels_hackreport_changelist")
    response = staff_client.post(url, {"action": "reject", "_selected_action": [report.pk]}, follow=True)
    assert "still being checked on cpu" in response.content.decode()
    report.refresh_from_db()
    assert report.status == "open"


def test_the_api_answers_409(staff_api, report):
    response = staff_api.post(f"/api/reports/{report.pk}/triage/", {"status": "rejected"}, format="json")
    assert response.status_code == 409 and "still being checked on cpu" in response.json()["detail"]


def test_once_checked_the_decision_in_the_form_is_staffs_triage(staff_client, report):
    ProofCheck.objects.filter(report=report).update(status="breaks", reason="wrong on the proof's inputs")
    decide(staff_client, report, status="confirmed", resolution="Caches its first output.", text="caches (edited)")
    report.refresh_from_db()
    report.candidate.refresh_from_db()
    assert (report.status, report.resolution, report.text) == ("confirmed", "Caches its first output.", "caches (edited)")
    assert report.triaged_by.username == "staff"
    assert (report.candidate.curation, report.candidate.curation_reason) == ("delisted", "Caches its first output.")
    assert AuditEntry.objects.filter(action="report confirmed", target_id=report.pk).exists()
