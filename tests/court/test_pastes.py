"""A pasted module belongs to its run: whoever holds the run's link (and the account that started
it) sees the run, its kernels and the module; nobody else finds it on any route or socket; it is
never in the public problem list, the leaderboard or its statistics until staff promote it.

The walk (tests/court/walk.py) goes through every route and socket as test_hidden_walk's does.
"""

from dataclasses import dataclass

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from court.leaderboard import board, leaderboard_archs
from court.models import AuditEntry, Candidate, HackReport, OptimizationRun, Problem, RunEvent
from court.services import submit_problem
from tests.court.factories import CANDIDATE_SOURCE, PROBLEM_SOURCE, make_candidate, make_evaluation, make_problem
from tests.court.walk import Targets, listen, walk_http, walk_sockets

pytestmark = pytest.mark.django_db(transaction=True)

PASTE_SOURCE = "pasted_module_source_7d3e"
PASTE_TITLE = "Pasted module title 4b8c"
PASTE_KERNEL = "pasted_run_kernel_code_e21a"
PASTE = (PASTE_SOURCE, PASTE_TITLE, PASTE_KERNEL)
PUBLIC_KERNEL = "public_kernel_code_90fd"
ARCH = "cpu"


@dataclass
class World:
    paste: Problem
    kernel: Candidate  # verified in the anonymous run, faster than anything listed
    run: OptimizationRun  # an anonymous visitor's run on the paste
    authors_run: OptimizationRun  # a signed-in author's run on the same paste
    report: HackReport
    users: dict


def pasted_source() -> str:
    source = PROBLEM_SOURCE.format(scale=7).replace('"""Scales by 7."""', f'"""{PASTE_TITLE}."""')
    return f"# {PASTE_SOURCE}\n{source}"


def build_world() -> World:
    users = {
        "author": get_user_model().objects.create_user("author"),
        "someone": get_user_model().objects.create_user("someone"),
        "staff": get_user_model().objects.create_user("curator", is_staff=True),
    }
    listed = make_problem(scale=2, origin="kernelbench", level=1, task=1)
    public = make_candidate(problem=listed, code=f"# {PUBLIC_KERNEL}\n" + CANDIDATE_SOURCE.format(scale=2))
    make_evaluation(public, arch=ARCH, speedup_eager=1.5)

    paste, _ = submit_problem(source=pasted_source())
    run = OptimizationRun.objects.create(problem=paste, session_key="anonymous-session", status="done")
    code = f"# {PASTE_KERNEL}\n" + CANDIDATE_SOURCE.format(scale=7)
    kernel = make_candidate(problem=paste, code=code, run=run, origin="model", round=1)
    make_evaluation(kernel, arch=ARCH, speedup_eager=9.0, verdict={"status": "verified", "log_excerpt": code})
    RunEvent.objects.create(run=run, seq=1, round=1, kind="prompt", text=paste.source)
    RunEvent.objects.create(run=run, seq=2, round=1, kind="candidate", text=code, data={"candidate": kernel.pk})
    authors_run = OptimizationRun.objects.create(problem=paste, requester=users["author"], status="done")
    report = HackReport.objects.create(candidate=kernel, reporter=users["author"], category="other", text="odd")
    return World(paste, kernel, run, authors_run, report, users)


@pytest.fixture
def world() -> World:
    return build_world()


def targets(world: World) -> Targets:
    return Targets(
        problems=[world.paste.pk],
        kernels=[world.kernel.pk],
        runs=[world.run.pk, world.authors_run.pk],
        reports=[world.report.pk],
        users=list(world.users.values()),
        arch=ARCH,
    )


def holding_the_link(world: World) -> Client:
    client = Client()
    assert client.get(world.run.get_absolute_url()).status_code == 200
    return client


def test_a_paste_is_unlisted_and_its_run_link_carries_its_key(world):
    assert world.paste.visibility == Problem.Visibility.UNLISTED
    assert world.run.get_absolute_url() == f"/runs/{world.run.pk}/?key={world.run.link_key}"
    assert Client().get(f"/runs/{world.run.pk}/").status_code == 404
    assert Client().get(f"/runs/{world.run.pk}/?key=not-{world.run.link_key}").status_code == 404


def test_a_paste_never_appears_in_the_problem_list_the_leaderboard_or_its_statistics(world):
    client = holding_the_link(world)  # even for whoever holds its link
    for path in ("/problems/", f"/leaderboard/{ARCH}/", "/api/problems/"):
        content = client.get(path).content.decode()
        assert all(marker not in content for marker in PASTE) and f"/problems/{world.paste.pk}/" not in content
    assert "0 problems" in client.get("/problems/", {"q": "Pasted module"}).content.decode()
    export = client.get(f"/api/leaderboard/{ARCH}/export.jsonl").content.decode()
    assert PASTE_KERNEL not in export and PASTE_SOURCE not in export
    shown = board(ARCH)
    assert [row.kernel for row in shown.rows] == [Candidate.objects.get(code__contains=PUBLIC_KERNEL).pk]
    every = next(s for s in shown.summary if s.level == "all" and s.baseline == "eager")
    assert (every.problems, every.verified, every.max) == (1, 1, 1.5)
    assert [s.level for s in shown.summary if s.baseline == "eager"] == [1, "all"]
    assert leaderboard_archs() == [ARCH]


@pytest.mark.parametrize("who", ["anonymous", "someone"])
def test_no_route_shows_a_paste_without_its_link(world, who):
    found = walk_http(targets(world), world.users.get(who), (*PASTE, PUBLIC_KERNEL))
    assert {marker: found[marker] for marker in PASTE} == {marker: set() for marker in PASTE}
    assert "api/leaderboard/%(arch)s/export.jsonl" in found[PUBLIC_KERNEL]


@pytest.mark.parametrize("who", ["anonymous", "someone"])
async def test_no_socket_opens_on_a_paste_without_its_link(who):
    world = await sync_to_async(build_world)()
    answers = await walk_sockets(targets(world), world.users.get(who))
    assert [path for path, sent in answers.items() if any(marker in sent for marker in PASTE)] == []
    assert answers[f"/ws/runs/{world.run.pk}/"] == answers[f"/ws/kernels/{world.kernel.pk}/"] == "refused"


def test_its_link_opens_the_run_its_kernels_and_the_module(world):
    client = holding_the_link(world)
    assert PASTE_KERNEL in client.get(f"/runs/{world.run.pk}/").content.decode()  # remembered: no key needed now
    assert PASTE_SOURCE in client.get(f"/kernels/{world.kernel.pk}/").content.decode()
    assert client.get(f"/kernels/{world.kernel.pk}/download.py").content.decode() == world.kernel.code
    assert PASTE_TITLE in client.get(f"/problems/{world.paste.pk}/").content.decode()
    assert client.get(f"/problems/{world.paste.pk}/source.py").content.decode() == world.paste.source
    # Another run on the same paste is someone else's.
    assert client.get(f"/runs/{world.authors_run.pk}/").status_code == 404


async def test_its_link_opens_its_sockets():
    world = await sync_to_async(build_world)()
    client = await sync_to_async(holding_the_link)(world)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    opened, sent = await listen(f"/ws/runs/{world.run.pk}/", session)
    assert opened and PASTE_KERNEL in sent
    assert (await listen(f"/ws/kernels/{world.kernel.pk}/", session))[0]


def test_the_account_that_started_a_run_sees_it_without_the_key(world):
    client = Client()
    client.force_login(world.users["author"])
    assert client.get(f"/runs/{world.authors_run.pk}/").status_code == 200
    assert client.get(f"/problems/{world.paste.pk}/").status_code == 200
    assert client.get(f"/api/runs/{world.authors_run.pk}/").json()["url"].endswith(f"?key={world.authors_run.link_key}")
    assert client.get(f"/runs/{world.run.pk}/").status_code == 404


def test_the_api_opens_a_run_with_its_key(world):
    client = Client()
    assert client.get(f"/api/runs/{world.run.pk}/").status_code == 404
    assert client.get(f"/api/runs/{world.run.pk}/", {"key": world.run.link_key}).json()["id"] == world.run.pk


def test_pasting_someone_elses_paste_starts_a_run_of_ones_own(world):
    client = Client()
    client.force_login(world.users["someone"])
    response = client.post("/", {"source": world.paste.source, "backend": "builtin", "max_rounds": 1})
    run = OptimizationRun.objects.get(requester=world.users["someone"])
    assert response.status_code == 302 and response["Location"] == run.get_absolute_url()
    assert run.problem == world.paste and f"?key={run.link_key}" in response["Location"]
    assert client.get(f"/runs/{world.run.pk}/").status_code == 404


def test_the_demo_says_so_before_run(client):
    content = client.get("/").content.decode()
    assert 'id="paste-notice"' in content and "unless staff promote it" in content


def test_staff_promote_a_paste_in_the_admin_and_it_is_audited(world):
    admin = Client()
    admin.force_login(get_user_model().objects.create_superuser("root", "root@example.org", "pw-root-123"))
    response = admin.post("/admin/kernels/problem/", {"action": "promote", "_selected_action": [world.paste.pk]}, follow=True)
    assert "1 pastes promoted to public problems." in response.content.decode()
    world.paste.refresh_from_db()
    assert world.paste.visibility == Problem.Visibility.LISTED
    entry = AuditEntry.objects.get(action="problem promoted")
    assert (entry.target_id, entry.actor.username) == (world.paste.pk, "root")
    assert world.kernel.pk in [row.kernel for row in board(ARCH).rows]
    assert f"/problems/{world.paste.pk}/" in Client().get("/problems/").content.decode()
