"""Who may write what: the permission matrix of every write endpoint of the API, and of every custom
admin action. Each cell checks the answer and what it did: a refused request changes nothing, an
allowed one changes something, and the matrices must name every write the site offers."""

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator

from court.models import AuditEntry, Candidate, Evaluation, HackReport, OptimizationRun, Problem
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import CANDIDATE_SOURCE, PROBLEM_SOURCE, make_candidate, make_problem
from tests.verification.conftest import register

pytestmark = pytest.mark.django_db

WHO = ["anonymous", "user", "staff"]


@pytest.fixture
def kernel():
    candidate = make_candidate(scale=2)
    Evaluation.objects.create(
        candidate=candidate,
        arch="h100",
        harness_version=HARNESS_VERSION,
        status="verified",
        speedup_eager=2.0,
        finished_at=timezone.now(),
    )
    return candidate


@pytest.fixture
def owner(db):
    return get_user_model().objects.create_user("owner", "owner@example.org", "pw-owner-123")


def state() -> tuple:
    """Everything a write through the API can change."""
    return (
        Problem.objects.count(),
        Candidate.objects.count(),
        HackReport.objects.count(),
        OptimizationRun.objects.count(),
        AuditEntry.objects.count(),
        list(Candidate.objects.order_by("pk").values_list("curation", flat=True)),
        list(HackReport.objects.order_by("pk").values_list("status", flat=True)),
        list(OptimizationRun.objects.order_by("pk").values_list("cancel_requested_at", flat=True)),
    )


def write_request(endpoint: str, kernel, owner) -> tuple[str, dict]:
    """One valid write request, so that only permissions decide the answer."""
    report = HackReport.objects.create(candidate=kernel, category="caching", text="caches")
    run = OptimizationRun.objects.create(problem=kernel.problem, requester=owner)
    return {
        "problem": ("/api/problems/", {"source": PROBLEM_SOURCE.format(scale=11)}),
        "candidate": ("/api/candidates/", {"problem": kernel.problem_id, "code": CANDIDATE_SOURCE.format(scale=5)}),
        "curate": (f"/api/candidates/{kernel.pk}/curate/", {"state": "featured"}),
        "reverify": (f"/api/candidates/{kernel.pk}/reverify/", {}),
        "report": ("/api/reports/", {"kernel": kernel.pk, "category": "caching", "text": "returns a stale output"}),
        "triage": (f"/api/reports/{report.pk}/triage/", {"status": "rejected"}),
        "run": ("/api/runs/", {"problem": kernel.problem_id}),
        "cancel": (f"/api/runs/{run.pk}/cancel/", {}),
        "token": ("/api/token/", {"username": "owner", "password": "pw-owner-123"}),
    }[endpoint]


MATRIX = {
    # endpoint: (path and method as the schema names them, answers to anonymous, user, staff)
    "problem": ("POST /api/problems/", (401, 201, 201)),
    "candidate": ("POST /api/candidates/", (401, 201, 201)),
    "curate": ("POST /api/candidates/{id}/curate/", (401, 403, 200)),
    "reverify": ("POST /api/candidates/{id}/reverify/", (401, 403, 202)),
    "report": ("POST /api/reports/", (401, 201, 201)),
    "triage": ("POST /api/reports/{id}/triage/", (401, 403, 200)),
    "run": ("POST /api/runs/", (401, 201, 201)),
    # Someone else's run: only its requester and staff may cancel it.
    "cancel": ("POST /api/runs/{id}/cancel/", (401, 403, 200)),
    # Signing in: anyone with the password gets the account's token; it changes no data.
    "token": ("POST /api/token/", (200, 200, 200)),
}


def test_the_matrix_names_every_write_operation_of_the_api():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    writes = {
        f"{method.upper()} {path}"
        for path, operations in schema["paths"].items()
        for method in operations
        if method in ("post", "put", "patch", "delete")
    }
    assert writes == {operation for operation, _ in MATRIX.values()}


@pytest.mark.parametrize("endpoint", sorted(MATRIX))
@pytest.mark.parametrize("who", WHO)
def test_write_permissions(request, endpoint, who, kernel, owner):
    client = request.getfixturevalue(who)
    url, body = write_request(endpoint, kernel, owner)
    before = state()
    response = client.post(url, body, format="json")
    assert response.status_code == MATRIX[endpoint][1][WHO.index(who)], response.content
    if response.status_code in (401, 403) or endpoint == "token":
        assert state() == before
    else:
        assert state() != before


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
@pytest.mark.parametrize(
    "path",
    [
        "/api/problems/{problem}/",
        "/api/candidates/{kernel}/",
        "/api/evaluations/{evaluation}/",
        "/api/reports/{report}/",
        "/api/runs/{run}/",
    ],
)
def test_nothing_is_edited_or_deleted_through_the_api(anonymous, user, staff, kernel, owner, path, method):
    report = HackReport.objects.create(candidate=kernel, category="caching", text="caches", reporter=user.user)
    ids = {
        "problem": kernel.problem_id,
        "kernel": kernel.pk,
        "evaluation": kernel.evaluations.get().pk,
        "report": report.pk,
        "run": OptimizationRun.objects.create(problem=kernel.problem, requester=user.user).pk,
    }
    url = path.format(**ids)
    before = state()
    codes = [getattr(client, method)(url, {}, format="json").status_code for client in (anonymous, user, staff)]
    assert codes == [401, 405, 405]
    assert state() == before


def test_the_requester_cancels_their_own_run(user, kernel):
    run = OptimizationRun.objects.create(problem=kernel.problem, requester=user.user)
    assert user.post(f"/api/runs/{run.pk}/cancel/").status_code == 200
    run.refresh_from_db()
    assert run.cancel_requested_at is not None


def test_reads_are_public(anonymous, kernel):
    for url in (
        "/api/problems/",
        "/api/candidates/",
        "/api/evaluations/",
        "/api/leaderboard/h100/",
        f"/api/kernels/{kernel.pk}/download",
    ):
        assert anonymous.get(url).status_code == 200, url


def test_reports_are_not_public(anonymous):
    assert anonymous.get("/api/reports/").status_code == 401


def test_users_see_only_their_own_reports(user, staff, kernel):
    HackReport.objects.create(candidate=kernel, category="caching", text="someone else's")
    user.post("/api/reports/", {"kernel": kernel.pk, "category": "precision", "text": "mine"}, format="json")
    assert [r["text"] for r in user.get("/api/reports/").json()["results"]] == ["mine"]
    assert len(staff.get("/api/reports/").json()["results"]) == 2


def test_hidden_kernels_are_invisible_to_the_public(anonymous, staff):
    hidden = make_candidate(scale=9, curation="hidden")
    assert anonymous.get(f"/api/candidates/{hidden.pk}/").status_code == 404
    assert anonymous.get(f"/api/kernels/{hidden.pk}/download").status_code == 404
    assert staff.get(f"/api/candidates/{hidden.pk}/").status_code == 200


# -- the admin ------------------------------------------------------------------------------------

ADMIN_ACTIONS = [
    ("kernels", "problem", "promote"),
    ("kernels", "problem", "make_listed"),
    ("kernels", "problem", "make_featured"),
    ("kernels", "problem", "make_hidden"),
    ("kernels", "problem", "count_in_statistics"),
    ("kernels", "problem", "keep_out_of_statistics"),
    ("kernels", "problem", "reverify"),
    ("kernels", "candidate", "make_listed"),
    ("kernels", "candidate", "make_featured"),
    ("kernels", "candidate", "make_hidden"),
    ("kernels", "candidate", "make_under_review"),
    ("kernels", "candidate", "delist_confirmed"),
    ("kernels", "candidate", "reverify"),
    ("kernels", "candidate", "reverify_outdated"),
    ("kernels", "hackreport", "confirm_and_delist"),
    ("kernels", "hackreport", "reject"),
    ("evaluation", "gpuworker", "catch_up_architectures"),
]


def test_the_admin_matrix_names_every_custom_action():
    registered = {
        (model._meta.app_label, model._meta.model_name, action if isinstance(action, str) else action.__name__)
        for model, model_admin in admin.site._registry.items()
        for action in (model_admin.actions or [])
    }
    assert registered == set(ADMIN_ACTIONS)


@pytest.fixture
def admin_targets(kernel):
    """One object per model, each in a state where every action on it has something to do."""
    Evaluation.objects.create(
        candidate=kernel, arch="a100", harness_version="0-old", status="verified", finished_at=timezone.now()
    )
    HackReport.objects.create(candidate=kernel, category="caching", text="confirmed", status="confirmed", resolution="Caches.")
    # Staff wrote the public reason on the open report (a confirmation needs one of its own).
    open_report = HackReport.objects.create(
        candidate=kernel, category="caching", text="caches its output", resolution="Caches its output per shape."
    )
    worker = register("a100")
    paste = make_problem(scale=21, visibility="unlisted")  # what staff promote
    return {
        "problem": kernel.problem_id,
        "problem:promote": paste.pk,
        "candidate": kernel.pk,
        "hackreport": open_report.pk,
        "gpuworker": worker.pk,
    }


def admin_state() -> tuple:
    return AuditEntry.objects.count(), Evaluation.objects.count(), state()


def staff_member(username: str, *codenames: str):
    member = get_user_model().objects.create_user(username, is_staff=True)
    models = ("problem", "candidate", "hackreport", "gpuworker")
    member.user_permissions.set(
        Permission.objects.filter(codename__in=[f"{codename}_{model}" for codename in codenames for model in models])
    )
    return member


@pytest.mark.parametrize("app,model,action", ADMIN_ACTIONS)
def test_admin_actions_need_a_staff_member_who_may_change(client, app, model, action, admin_targets):
    url = f"/admin/{app}/{model}/"
    body = {"action": action, "_selected_action": [admin_targets.get(f"{model}:{action}", admin_targets[model])]}
    before = admin_state()

    response = client.post(url, body)  # anonymous
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    client.force_login(get_user_model().objects.create_user("plain"))
    response = client.post(url, body)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert admin_state() == before

    client.force_login(staff_member("viewer", "view"))
    client.post(url, body)
    assert admin_state() == before

    curator = staff_member("curator", "view", "change")
    client.force_login(curator)
    assert client.post(url, body, follow=True).status_code == 200
    assert admin_state() != before


@pytest.mark.parametrize("app,model,action", [a for a in ADMIN_ACTIONS if a[0] == "kernels"])
def test_admin_actions_are_audited_under_the_curators_name(client, app, model, action, admin_targets):
    curator = staff_member("curator", "view", "change")
    client.force_login(curator)
    target = admin_targets.get(f"{model}:{action}", admin_targets[model])
    client.post(f"/admin/{app}/{model}/", {"action": action, "_selected_action": [target]})
    assert AuditEntry.objects.filter(actor=curator).exists()
    assert not AuditEntry.objects.exclude(actor=curator).exists()


def test_problem_submission_reports_validation_errors(user):
    response = user.post("/api/problems/", {"source": "import torch\n"}, format="json")
    assert response.status_code == 400
    assert "No class `Model`" in str(response.json()["source"])


def test_same_problem_twice_answers_200_with_the_existing_one(user):
    first = user.post("/api/problems/", {"source": PROBLEM_SOURCE.format(scale=13)}, format="json")
    second = user.post("/api/problems/", {"source": "# again\n" + PROBLEM_SOURCE.format(scale=13)}, format="json")
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["id"] == second.json()["id"]
