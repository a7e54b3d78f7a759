"""Staff curate from the admin: every model has a page, curation actions record who did what."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from court.models import HackReport, Problem
from tests.court.factories import make_candidate, make_problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    user = get_user_model().objects.create_superuser("staff", "staff@example.org", "pw-staff-123")
    client.force_login(user)
    client.user = user
    return client


@pytest.mark.parametrize("model", ["problem", "candidate", "claim", "evaluation", "optimizationrun", "hackreport"])
def test_every_kernels_model_has_an_admin_list(staff_client, model):
    make_candidate()
    assert staff_client.get(reverse(f"admin:kernels_{model}_changelist")).status_code == 200


def test_worker_registry_has_an_admin_list(staff_client):
    assert staff_client.get(reverse("admin:evaluation_gpuworker_changelist")).status_code == 200


def test_anonymous_visitors_cannot_reach_admin_lists(client):
    response = client.get(reverse("admin:kernels_candidate_changelist"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def act(staff_client, model, action, ids):
    return staff_client.post(
        reverse(f"admin:kernels_{model}_changelist"), {"action": action, "_selected_action": ids}, follow=True
    )


def test_feature_action_records_the_curator(staff_client):
    candidate = make_candidate()
    act(staff_client, "candidate", "make_featured", [candidate.pk])
    candidate.refresh_from_db()
    assert candidate.curation == "featured" and candidate.curated_by == staff_client.user


def test_the_action_counts_one_candidate_in_the_singular(staff_client):
    response = act(staff_client, "candidate", "make_featured", [make_candidate().pk])
    assert b"1 candidate is now featured." in response.content


def test_delisting_without_a_confirmed_report_is_refused(staff_client):
    candidate = make_candidate()
    response = act(staff_client, "candidate", "delist_confirmed", [candidate.pk])
    candidate.refresh_from_db()
    assert candidate.curation == "listed"
    assert b"no confirmed hack report" in response.content


def test_confirming_a_report_delists_the_kernel_with_the_resolution_as_reason(staff_client):
    candidate = make_candidate()
    report = HackReport.objects.create(
        candidate=candidate, category="lazy_output", text="returns a lazy tensor", resolution="Lazy output: the matmul never ran."
    )
    act(staff_client, "hackreport", "confirm_and_delist", [report.pk])
    candidate.refresh_from_db()
    report.refresh_from_db()
    assert report.status == "confirmed" and report.triaged_by == staff_client.user
    assert candidate.curation == "delisted" and candidate.curation_reason == "Lazy output: the matmul never ran."


def test_confirming_without_a_resolution_keeps_the_reporters_text_private(staff_client):
    candidate = make_candidate()
    report = HackReport.objects.create(candidate=candidate, category="other", text="my notes on the author, for staff")
    response = act(staff_client, "hackreport", "confirm_and_delist", [report.pk])
    candidate.refresh_from_db()
    report.refresh_from_db()
    assert (report.status, candidate.curation, candidate.curation_reason) == ("open", "listed", "")
    assert b"needs a resolution of its own" in response.content


def test_delisting_needs_a_confirmed_report_with_a_resolution(staff_client):
    candidate = make_candidate()
    HackReport.objects.create(candidate=candidate, category="other", text="my notes, for staff", status="confirmed")
    response = act(staff_client, "candidate", "delist_confirmed", [candidate.pk])
    candidate.refresh_from_db()
    assert (candidate.curation, candidate.curation_reason) == ("listed", "")
    assert b"no confirmed hack report with a resolution" in response.content


def test_hiding_problems_in_bulk(staff_client):
    first, second = make_problem(scale=2), make_problem(scale=3)
    act(staff_client, "problem", "make_hidden", [first.pk, second.pk])
    assert Problem.objects.filter(visibility="hidden").count() == 2
