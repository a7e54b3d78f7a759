"""The audit log says who did what to which kernel, problem or report, and why, whichever way the
action came: the API, the admin or the platform itself."""

import pytest

from court import curation
from court.models import AuditEntry, HackReport
from tests.court.factories import make_candidate

pytestmark = pytest.mark.django_db


def entries() -> list[tuple]:
    return [
        (entry.actor.username if entry.actor else None, entry.action, entry.target_type, entry.target_id, entry.detail)
        for entry in AuditEntry.objects.order_by("id")
    ]


def test_curating_through_the_api_records_the_curator_and_the_reason(staff_api):
    kernel = make_candidate()
    staff_api.post(f"/api/candidates/{kernel.pk}/curate/", {"state": "hidden", "reason": "Duplicate of #1."}, format="json")
    assert entries() == [("curator", "kernel hidden", "candidate", kernel.pk, "was listed. Duplicate of #1.")]


def test_a_refused_curation_records_nothing(staff_api):
    kernel = make_candidate()
    response = staff_api.post(f"/api/candidates/{kernel.pk}/curate/", {"state": "delisted"}, format="json")
    assert response.status_code == 400 and "give the confirmed hack as the reason" in response.json()["reason"][0]
    assert entries() == []


def test_re_verification_through_the_api_is_recorded(staff_api):
    kernel = make_candidate()
    staff_api.post(f"/api/candidates/{kernel.pk}/reverify/")
    assert entries() == [("curator", "kernel re-verification", "candidate", kernel.pk, "staff request")]


def test_rejecting_the_last_open_report_lists_the_kernel_again_under_the_curators_name(staff_api):
    kernel = make_candidate(curation="under_review")
    report = HackReport.objects.create(candidate=kernel, category="precision", text="fp16 inside")
    staff_api.post(f"/api/reports/{report.pk}/triage/", {"status": "rejected", "resolution": "Declared tier."}, format="json")
    assert entries() == [
        ("curator", "report rejected", "hackreport", report.pk, "Declared tier."),
        ("curator", "kernel listed", "candidate", kernel.pk, "was under_review. Report rejected."),
    ]


def test_the_platform_acting_on_its_own_is_recorded_without_an_actor():
    kernel = make_candidate()
    curation.curate_kernel(candidate=kernel, state="under_review", by=None, reason="Proof breaks it.")
    assert entries() == [(None, "kernel under_review", "candidate", kernel.pk, "was listed. Proof breaks it.")]
    assert str(AuditEntry.objects.get()) == f"platform kernel under_review candidate {kernel.pk}"


def test_the_log_cannot_be_edited_in_the_admin(admin_client):
    kernel = make_candidate()
    curation.curate_kernel(candidate=kernel, state="hidden", by=None)
    entry = AuditEntry.objects.get()
    assert admin_client.get("/admin/kernels/auditentry/").status_code == 200
    assert admin_client.post(f"/admin/kernels/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert admin_client.post(f"/admin/kernels/auditentry/{entry.pk}/change/", {"action": "x"}).status_code == 403
    assert AuditEntry.objects.count() == 1
