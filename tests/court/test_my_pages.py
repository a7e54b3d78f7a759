"""A signed-in user finds their own runs and reports ("My runs", "My reports", linked from the
header), and a problem's page starts a run on it ("Optimize this"); issue 18, "Finding things"."""

import pytest
from django.contrib.auth import get_user_model

from court.models import HackReport, OptimizationRun, ProofCheck
from tests.court.factories import make_candidate, make_problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(client):
    user = get_user_model().objects.create_user("ada", password="pw-ada-123")
    client.force_login(user)
    return user


def test_my_runs_lists_mine_newest_first(client, ada):
    problem = make_problem(scale=2)
    older = OptimizationRun.objects.create(problem=problem, requester=ada)
    newer = OptimizationRun.objects.create(problem=problem, requester=ada, max_rounds=3)
    theirs = OptimizationRun.objects.create(problem=problem, requester=get_user_model().objects.create_user("bob"))
    page = client.get("/accounts/runs/").content.decode()
    assert page.index(f'href="/runs/{newer.pk}/"') < page.index(f'href="/runs/{older.pk}/"')
    assert f"/runs/{theirs.pk}/" not in page
    assert "0 of 3" in page and "2 runs" in page


def test_my_reports_say_where_each_stands(client, ada):
    kernel = make_candidate(scale=2)
    hidden = make_candidate(scale=3, curation="hidden")
    checked = HackReport.objects.create(candidate=kernel, reporter=ada, category="caching", text="caches", proof_code="p")
    ProofCheck.objects.create(report=checked, arch="cpu", status="breaks")
    HackReport.objects.create(
        candidate=hidden, reporter=ada, category="other", text="odd", status="rejected", resolution="Not a hack."
    )
    page = client.get("/accounts/reports/").content.decode()
    assert f'href="/kernels/{kernel.pk}/"' in page and "Kernel fails on the proof&#x27;s inputs" in page
    assert f'#{hidden.pk} <span class="meta">(no longer shown)</span>' in page and f'href="/kernels/{hidden.pk}/"' not in page
    assert "Rejected: Not a hack." in page


@pytest.mark.parametrize("path", ["/accounts/runs/", "/accounts/reports/"])
def test_a_visitor_is_asked_to_log_in(client, path):
    response = client.get(path)
    assert response.status_code == 302 and response["Location"] == f"/accounts/login/?next={path}"


def test_the_header_links_them_once_logged_in(client, ada):
    page = client.get("/problems/").content.decode()
    assert 'href="/accounts/runs/">My runs' in page and 'href="/accounts/reports/">My reports' in page
    client.logout()
    assert "My runs" not in client.get("/problems/").content.decode()


def test_a_problem_page_offers_to_optimize_it(client):
    problem = make_problem(scale=2)
    assert f'href="/?example={problem.pk}">Optimize this' in client.get(f"/problems/{problem.pk}/").content.decode()
    demo = client.get(f"/?example={problem.pk}").content.decode()
    assert "Scales by 2." in demo
