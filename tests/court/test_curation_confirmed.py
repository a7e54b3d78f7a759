"""A confirmed hack report takes the kernel off everything that ranks or counts kernels: the
leaderboard (page and JSON), its statistics, the JSONL export, the problem list's counts and the
architecture tabs, and the page of known kernels a run shows first."""

import json

import pytest
from django.utils import timezone

from court import selectors
from court.models import AuditEntry, Evaluation, HackReport
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import make_candidate, make_problem

pytestmark = pytest.mark.django_db


def verified(kernel, eager: float, arch: str = "h100") -> Evaluation:
    return Evaluation.objects.create(
        candidate=kernel,
        arch=arch,
        harness_version=HARNESS_VERSION,
        status="verified",
        speedup_eager=eager,
        speedup_compile=eager / 2,
        finished_at=timezone.now(),
    )


@pytest.fixture
def board():
    """Task 1 has an honest kernel (1.5x) and a faster hacked one (6x, also the only kernel on l40);
    task 2 has an honest kernel (2x)."""
    first = make_problem(scale=2, origin="kernelbench", level=1, task=1)
    second = make_problem(scale=3, origin="kernelbench", level=1, task=2)
    honest, hacked, other = (make_candidate(problem=p, scale=s) for p, s in ((first, 20), (first, 21), (second, 30)))
    verified(honest, 1.5)
    verified(hacked, 6.0)
    verified(hacked, 6.0, arch="l40")
    verified(other, 2.0)
    return {"honest": honest, "hacked": hacked, "other": other, "problem": first}


def all_levels_eager(summary: list[dict]) -> dict:
    return next(row for row in summary if row["baseline"] == "eager" and row["level"] == "all")


def confirm(staff_api, kernel) -> HackReport:
    report = HackReport.objects.create(candidate=kernel, category="caching", text="returns the first output again")
    response = staff_api.post(
        f"/api/reports/{report.pk}/triage/", {"status": "confirmed", "resolution": "Caches its output per shape."}, format="json"
    )
    assert response.status_code == 200, response.content
    return report


def test_the_hacked_kernel_leads_until_the_report_is_confirmed(client, staff_api, board):
    hacked = board["hacked"]
    board_json = staff_api.get("/api/leaderboard/h100/").json()
    assert hacked.pk in [row["kernel"] for row in board_json["rows"]]
    assert all_levels_eager(board_json["summary"])["max"] == 6.0
    assert f'/kernels/{hacked.pk}/"' in client.get("/leaderboard/h100/").content.decode()

    confirm(staff_api, hacked)

    board_json = staff_api.get("/api/leaderboard/h100/").json()
    assert [row["kernel"] for row in board_json["rows"]] == [board["honest"].pk, board["other"].pk]
    stats = all_levels_eager(board_json["summary"])
    assert (stats["verified"], stats["mean"], stats["max"]) == (2, 1.75, 2.0)
    page = client.get("/leaderboard/h100/").content.decode()
    assert f'/kernels/{hacked.pk}/"' not in page and f'/kernels/{board["honest"].pk}/"' in page


def test_a_confirmed_hack_leaves_the_export(client, staff_api, board):
    confirm(staff_api, board["hacked"])
    response = client.get("/api/leaderboard/h100/export.jsonl")
    lines = [json.loads(line) for line in response.content.decode().splitlines()]
    assert [line["measured"]["kernel_id"] for line in lines] == [board["honest"].pk, board["other"].pk]
    assert board["hacked"].code not in response.content.decode()
    assert lines[0]["score_default"] == 1.5


def test_a_confirmed_hack_leaves_the_counts_and_the_tabs(client, staff_api, board):
    assert "l40" in staff_api.get("/leaderboard/h100/").context["archs"]
    confirm(staff_api, board["hacked"])
    assert client.get("/leaderboard/h100/").context["archs"] == ["h100"]
    assert staff_api.get("/api/leaderboard/l40/").json()["rows"] == []
    counts = {p.pk: p.verified_count for p in selectors.with_counts(selectors.problem_rows(selectors.ProblemFilters()))}
    assert counts[board["problem"].pk] == 1
    assert [e.candidate_id for e in selectors.verified_kernels_of(board["problem"])] == [board["honest"].pk]


def test_confirming_records_who_delisted_the_kernel_and_why(staff_api, board):
    report = confirm(staff_api, board["hacked"])
    hacked = board["hacked"]
    hacked.refresh_from_db()
    assert (hacked.curation, hacked.curated_by, hacked.curation_reason) == (
        "delisted",
        staff_api.user,
        "Caches its output per shape.",
    )
    entries = AuditEntry.objects.filter(actor=staff_api.user).order_by("id")
    assert [(e.action, e.target_type, e.target_id) for e in entries] == [
        ("report confirmed", "hackreport", report.pk),
        ("kernel delisted", "candidate", hacked.pk),
    ]


def triage(staff_api, report, **decision):
    return staff_api.post(f"/api/reports/{report.pk}/triage/", decision, format="json")


def test_a_confirmation_needs_a_public_reason_of_its_own(staff_api, board):
    report = HackReport.objects.create(candidate=board["hacked"], category="caching", text="my notes, for staff")
    response = triage(staff_api, report, status="confirmed")
    assert response.status_code == 409 and "needs a resolution of its own" in response.json()["detail"]
    board["hacked"].refresh_from_db()
    assert (board["hacked"].curation, board["hacked"].curation_reason) == ("listed", "")


def test_confirming_twice_delists_once(staff_api, board):
    hacked = board["hacked"]
    report = confirm(staff_api, hacked)
    again = triage(staff_api, report, status="confirmed", resolution="Other words.")
    assert again.status_code == 409 and "already confirmed" in again.json()["detail"]
    second = HackReport.objects.create(candidate=hacked, category="caching", text="it caches")
    assert triage(staff_api, second, status="confirmed", resolution="Also caches.").status_code == 200
    hacked.refresh_from_db()
    assert hacked.curation_reason == "Caches its output per shape."
    assert AuditEntry.objects.filter(action="kernel delisted").count() == 1
