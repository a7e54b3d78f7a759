"""A hidden kernel and a hidden problem appear nowhere: every route of the URLconf and every
WebSocket route is walked, its parameters aimed at the hidden things, as an anonymous visitor and
as an unrelated signed-in user; staff still find them. The hidden kernel's run still opens, saying
what staff removed from it.

The walk (tests/court/walk.py) reads the routes from the URLconf and config.routing, so a new
route is walked as soon as it exists; one whose parameters it cannot fill fails the test until its
PARAMETERS say how.
"""

from dataclasses import dataclass

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import Client

from court.models import Candidate, Claim, HackReport, OptimizationRun, RunEvent
from court.models.visibility import TAKEN_DOWN
from tests.court.factories import CANDIDATE_SOURCE, PROBLEM_SOURCE, make_candidate, make_evaluation, make_problem
from tests.court.walk import Targets, fill, walk_http, walk_sockets

pytestmark = pytest.mark.django_db(transaction=True)

# Unique words in what must stay hidden, and in what is public (the walk reads real bodies).
HIDDEN_KERNEL = "hidden_kernel_code_b7e1"
HIDDEN_SOURCE = "hidden_problem_source_5c2d"
HIDDEN_TITLE = "Hidden problem title 9a4f"
HIDDEN = (HIDDEN_KERNEL, HIDDEN_SOURCE, HIDDEN_TITLE)
PUBLIC_KERNEL = "public_kernel_code_31f0"
REMOVED = "Removed by staff"  # what the hidden kernel's run says in its place
ARCH = "cpu"
OTHER_ARCH = "h100"  # every kernel is verified there too: the comparison of the two is walked


@dataclass
class World:
    hidden_kernel: Candidate  # hidden by staff, from a run on a listed problem
    kernel_of_hidden_problem: Candidate  # listed itself, but its problem is hidden
    runs: list[OptimizationRun]  # the hidden kernel's run, and a run on the hidden problem
    report: HackReport  # filed against the hidden kernel by someone else
    users: dict


def verified(kernel: Candidate, eager: float) -> None:
    # What a candidate prints is its own: the verdict's log shows its code.
    for arch in (ARCH, OTHER_ARCH):
        make_evaluation(kernel, arch=arch, speedup_eager=eager, verdict={"status": "verified", "log_excerpt": kernel.code})


def build_world() -> World:
    users = {
        "author": get_user_model().objects.create_user("author"),
        "someone": get_user_model().objects.create_user("someone"),
        "staff": get_user_model().objects.create_user("curator", is_staff=True),
    }
    listed = make_problem(scale=2, origin="kernelbench", level=1, task=1)
    verified(make_candidate(problem=listed, code=f"# {PUBLIC_KERNEL}\n" + CANDIDATE_SOURCE.format(scale=2)), 1.5)

    run = OptimizationRun.objects.create(problem=listed, requester=users["author"], status="done")
    hidden_code = f"# {HIDDEN_KERNEL}\n" + CANDIDATE_SOURCE.format(scale=4)
    hidden_kernel = make_candidate(
        problem=listed, code=hidden_code, run=run, origin="model", round=1, submitted_by=users["author"]
    )
    verified(hidden_kernel, 9.0)  # faster than the public one: it would lead the leaderboard
    report = HackReport.objects.create(candidate=hidden_kernel, reporter=users["author"], category="other", text="odd")
    for seq, (kind, text, data) in enumerate(
        [
            ("prompt", listed.source, {}),
            ("answer", f"```python\n{hidden_code}```", {}),
            ("candidate", hidden_code, {"candidate": hidden_kernel.pk, "url": hidden_kernel.get_absolute_url()}),
            ("verdicts", "", {"candidate": hidden_kernel.pk, "verdicts": [{"code": hidden_code}]}),
        ],
        start=1,
    ):
        RunEvent.objects.create(run=run, seq=seq, round=1, kind=kind, text=text, data=data)
    hidden_kernel.curate(state="hidden", by=users["staff"])

    source = f"# {HIDDEN_SOURCE}\n" + PROBLEM_SOURCE.format(scale=3)
    hidden_problem = make_problem(scale=3, origin="kernelbench", level=1, task=2, title=HIDDEN_TITLE)
    hidden_problem.source = source
    hidden_problem.visibility = "hidden"
    hidden_problem.save()
    kernel_of_hidden_problem = make_candidate(problem=hidden_problem, scale=5)
    verified(kernel_of_hidden_problem, 3.0)
    run_on_hidden = OptimizationRun.objects.create(problem=hidden_problem, requester=users["author"], status="done")
    RunEvent.objects.create(run=run_on_hidden, seq=1, round=1, kind="prompt", text=source)
    for published in Candidate.objects.all():  # all three in the audit of published kernels, as claimed
        Claim.objects.create(candidate=published, source="cuda-l1", arch=ARCH, speedup_eager=2.0)
    return World(hidden_kernel, kernel_of_hidden_problem, [run, run_on_hidden], report, users)


@pytest.fixture
def world() -> World:
    return build_world()


def hidden_kernels(world: World) -> list[int]:
    return [world.hidden_kernel.pk, world.kernel_of_hidden_problem.pk]


def targets(world: World) -> Targets:
    """The walk aimed at the hidden things."""
    return Targets(
        problems=[world.kernel_of_hidden_problem.problem_id],
        kernels=hidden_kernels(world),
        runs=[run.pk for run in world.runs],
        reports=[world.report.pk],
        users=list(world.users.values()),
        arch=ARCH,
        other_arch=OTHER_ARCH,
    )


def walk(world: World, user) -> dict[str, set[str]]:
    return walk_http(targets(world), user, (*HIDDEN, PUBLIC_KERNEL, REMOVED))


@pytest.mark.parametrize("who", ["anonymous", "someone"])
def test_no_route_shows_a_hidden_kernel_or_problem(world, who):
    found = walk(world, world.users.get(who))
    assert {marker: found[marker] for marker in HIDDEN} == {marker: set() for marker in HIDDEN}
    assert {"api/candidates/", "api/leaderboard/%(arch)s/export.jsonl"} <= found[PUBLIC_KERNEL]
    assert "runs/%(pk)s/" in found[REMOVED]


def test_staff_still_find_them(world):
    found = walk(world, world.users["staff"])
    assert {
        "kernels/%(pk)s/",
        "kernels/%(pk)s/download.py",
        "api/candidates/%(pk)s/",
        "api/kernels/%(pk)s/download",
        "runs/%(pk)s/",
    } <= found[HIDDEN_KERNEL]
    assert {"problems/%(pk)s/", "problems/%(pk)s/source.py", "kernels/%(pk)s/", "kernels/%(pk)s/bundle.zip"} <= found[
        HIDDEN_SOURCE
    ]
    assert {"problems/%(pk)s/", "api/problems/%(pk)s/", "runs/%(pk)s/"} <= found[HIDDEN_TITLE]


@pytest.mark.parametrize("who", ["anonymous", "someone"])
async def test_no_socket_opens_on_a_hidden_kernel_or_run_or_sends_one(who):
    world = await sync_to_async(build_world)()
    answers = await walk_sockets(targets(world), world.users.get(who))
    assert [path for path, sent in answers.items() if any(marker in sent for marker in HIDDEN)] == []
    hidden_paths = [f"/ws/kernels/{pk}/" for pk in hidden_kernels(world)] + [f"/ws/runs/{world.runs[1].pk}/"]
    assert {path: answers[path] for path in hidden_paths} == dict.fromkeys(hidden_paths, "refused")
    # The hidden kernel's run, on a listed problem, replays without it (the markers above).
    assert REMOVED in answers[f"/ws/runs/{world.runs[0].pk}/"]
    assert answers[f"/ws/leaderboard/{ARCH}/"] != "refused"


async def test_staff_sockets_replay_them():
    world = await sync_to_async(build_world)()
    answers = await walk_sockets(targets(world), world.users["staff"])
    assert HIDDEN_KERNEL in answers[f"/ws/runs/{world.runs[0].pk}/"]
    assert HIDDEN_SOURCE in answers[f"/ws/runs/{world.runs[1].pk}/"]
    assert answers[f"/ws/kernels/{world.hidden_kernel.pk}/"] != "refused"


def test_a_route_the_walk_cannot_fill_fails_it(world):
    unfilled = []
    assert fill(targets(world), "kernels/%(pk)s/lineage/%(ancestor)s/", {}, unfilled) == []
    assert unfilled == ["kernels/%(pk)s/lineage/%(ancestor)s/: ancestor"]


def test_nothing_is_accepted_against_hidden_things(world):
    client = Client()
    client.force_login(world.users["someone"])
    for kernel in hidden_kernels(world):
        report = {"category": "other", "text": "fast because it caches"}
        assert client.post(f"/kernels/{kernel}/report/", report).status_code == 404
        response = client.post("/api/reports/", {**report, "kernel": kernel})
        assert response.status_code == 400 and "kernel" in response.json()
    assert HackReport.objects.count() == 1

    hidden_source = world.kernel_of_hidden_problem.problem.source
    pasted = client.post("/", {"source": hidden_source, "backend": "builtin", "max_rounds": 1})
    assert pasted.status_code == 200 and TAKEN_DOWN in pasted.content.decode()
    response = client.post("/api/problems/", {"source": hidden_source})
    assert (response.status_code, response.json()) == (403, {"detail": TAKEN_DOWN})
    response = client.post("/api/candidates/", {"problem": world.kernel_of_hidden_problem.problem_id, "code": "x"})
    assert response.status_code == 400 and "problem" in response.json()
    assert OptimizationRun.objects.count() == 2
