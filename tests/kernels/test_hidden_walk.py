"""A hidden kernel and a hidden problem appear nowhere: every route of the URLconf and every
WebSocket route is walked, its parameters aimed at the hidden things, as an anonymous visitor and
as an unrelated signed-in user; staff still find them.

The routes are read from the URLconf and config.routing, so a new route is walked as soon as it
exists; one whose parameters the walk cannot fill fails the test until PARAMETERS says how.
"""

import io
import itertools
import json
import zipfile
from dataclasses import dataclass
from urllib.parse import urlencode

import pytest
from asgiref.sync import sync_to_async
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.core.cache import cache
from django.test import Client
from django.urls import URLResolver, get_resolver, resolve
from django.utils.regex_helper import normalize

from config.routing import websocket_urlpatterns
from kernels.models import Candidate, Evaluation, HackReport, OptimizationRun, RunEvent
from kernels.models.visibility import TAKEN_DOWN
from tests.kernels.factories import CANDIDATE_SOURCE, PROBLEM_SOURCE, make_candidate, make_evaluation, make_problem

pytestmark = pytest.mark.django_db(transaction=True)

# Unique words in what must stay hidden, and in what is public (the walk reads real bodies).
HIDDEN_KERNEL = "hidden_kernel_code_b7e1"
HIDDEN_SOURCE = "hidden_problem_source_5c2d"
HIDDEN_TITLE = "Hidden problem title 9a4f"
HIDDEN = (HIDDEN_KERNEL, HIDDEN_SOURCE, HIDDEN_TITLE)
PUBLIC_KERNEL = "public_kernel_code_31f0"
ARCH = "cpu"


@dataclass
class World:
    hidden_kernel: Candidate  # hidden by staff, from a run on a listed problem
    kernel_of_hidden_problem: Candidate  # listed itself, but its problem is hidden
    runs: list[OptimizationRun]  # the hidden kernel's run, and a run on the hidden problem
    report: HackReport  # filed against the hidden kernel by someone else
    users: dict


def verified(kernel: Candidate, eager: float) -> Evaluation:
    # What a candidate prints is its own: the verdict's log shows its code.
    return make_evaluation(kernel, arch=ARCH, speedup_eager=eager, verdict={"status": "verified", "log_excerpt": kernel.code})


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
    return World(hidden_kernel, kernel_of_hidden_problem, [run, run_on_hidden], report, users)


@pytest.fixture
def world() -> World:
    return build_world()


def admin_objects(world: World, route: str) -> list:
    """An admin page of one object: the hidden one of its model, else any."""
    model = route.split("/")[2]
    hidden = {
        "candidate": [world.hidden_kernel.pk, world.kernel_of_hidden_problem.pk],
        "problem": [world.kernel_of_hidden_problem.problem_id],
        "optimizationrun": [run.pk for run in world.runs],
        "hackreport": [world.report.pk],
        "evaluation": list(Evaluation.objects.filter(candidate__in=hidden_kernels(world)).values_list("pk", flat=True)),
        "runevent": list(RunEvent.objects.filter(run__in=world.runs).values_list("pk", flat=True)),
    }
    return hidden.get(model, [1])


def hidden_kernels(world: World) -> list[int]:
    return [world.hidden_kernel.pk, world.kernel_of_hidden_problem.pk]


def run_ids(world: World) -> list[int]:
    return [run.pk for run in world.runs]


# Each parameter, by where its route starts (the longest start wins): the values it is walked
# with, aimed at the hidden objects. A route with a parameter no entry fills fails the walk.
PARAMETERS = [
    ("problems/", "pk", lambda world, route: [world.kernel_of_hidden_problem.problem_id]),
    ("kernels/", "pk", lambda world, route: hidden_kernels(world)),
    ("runs/", "pk", lambda world, route: run_ids(world)),
    ("leaderboard/", "arch", lambda world, route: [ARCH]),
    ("api/", "format", lambda world, route: ["json"]),
    ("api/problems/", "pk", lambda world, route: [world.kernel_of_hidden_problem.problem_id]),
    ("api/candidates/", "pk", lambda world, route: hidden_kernels(world)),
    ("api/kernels/", "pk", lambda world, route: hidden_kernels(world)),
    (
        "api/evaluations/",
        "pk",
        lambda world, route: list(Evaluation.objects.filter(candidate__in=hidden_kernels(world)).values_list("pk", flat=True)),
    ),
    ("api/reports/", "pk", lambda world, route: [world.report.pk]),
    ("api/runs/", "pk", lambda world, route: run_ids(world)),
    ("api/leaderboard/", "arch", lambda world, route: [ARCH]),
    ("admin/", "object_id", admin_objects),
    ("admin/", "id", lambda world, route: [user.pk for user in world.users.values()]),
    ("admin/", "app_label", lambda world, route: ["kernels"]),
    ("admin/", "url", lambda world, route: [f"kernels/candidate/{world.hidden_kernel.pk}/"]),
    ("admin/r/", "content_type_id", lambda world, route: [ContentType.objects.get_for_model(Candidate).pk]),
    ("admin/r/", "object_id", lambda world, route: hidden_kernels(world)),
    ("accounts/reset/", "uidb64", lambda world, route: ["MQ"]),
    ("accounts/reset/", "token", lambda world, route: ["set-password"]),
    ("ws/runs/", "run_id", lambda world, route: run_ids(world)),
    ("ws/kernels/", "candidate_id", lambda world, route: hidden_kernels(world)),
    ("ws/leaderboard/", "arch", lambda world, route: [ARCH]),
]


def query(world: World) -> str:
    """Query parameters that name the hidden objects, for routes that filter or prefill by them."""
    problem, kernel = world.kernel_of_hidden_problem.problem_id, world.hidden_kernel.pk
    return urlencode({"example": problem, "problem": problem, "candidate": kernel, "run": world.runs[0].pk, "curation": "hidden"})


def routes(patterns, prefix: str = "", converters=None) -> list[tuple[str, dict]]:
    """Every route below `patterns`: a format string with %(name)s for each parameter, and the
    converters that write the parameters of path() routes into a URL."""
    found = []
    for entry in patterns:
        regex = prefix + entry.pattern.regex.pattern.removeprefix("^")
        known = {**(converters or {}), **getattr(entry.pattern, "converters", {})}
        if isinstance(entry, URLResolver):
            found += routes(entry.url_patterns, regex, known)
        else:
            found += [(route, known) for route, _ in normalize(regex)[:1]]
    return found


def fill(world: World, route: str, converters: dict, unfilled: list[str]) -> list[str]:
    """The paths the walk takes for `route`: every combination of its parameters' values."""
    names = sorted({part.split(")s")[0] for part in route.split("%(")[1:]})
    choices = []
    for name in names:
        rules = [(start, values) for start, param, values in PARAMETERS if param == name and route.startswith(start)]
        if not rules:
            unfilled.append(f"{route}: {name}")
            return []
        values = max(rules, key=lambda rule: len(rule[0]))[1](world, route)
        to_url = converters[name].to_url if name in converters else str
        choices.append([to_url(value) for value in values])
    return ["/" + route % dict(zip(names, combination)) for combination in itertools.product(*choices)]


def http_paths(world: World) -> list[tuple[str, str]]:
    """(route, path) for every HTTP route: filled, and those without parameters also with `query`."""
    unfilled, walk = [], []
    for route, converters in routes(get_resolver().url_patterns):
        paths = fill(world, route, converters, unfilled)
        for path in paths:
            resolve(path)  # the filling fits the route's converters
            walk.append((route, path))
        if "%(" not in route:
            walk.append((route, f"{paths[0]}?{query(world)}"))
    assert not unfilled, f"the walk does not know how to fill these routes' parameters: {unfilled}"
    return walk


def readable(response) -> str:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    if body.startswith(b"PK\x03\x04"):  # a zip (the bundle): what it holds
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            body = b"\n".join(archive.read(name) for name in archive.namelist())
    return body.decode(errors="replace")


def walk_http(world: World, user) -> dict[str, set[str]]:
    """GET every path as `user` (None: anonymous), following redirects; for each marker, the routes
    whose answer holds it."""
    client = Client()
    if user is not None:
        client.force_login(user)
    found = {marker: set() for marker in (*HIDDEN, PUBLIC_KERNEL)}
    for route, path in http_paths(world):
        cache.clear()  # the throttles would answer 429 long before the walk ends
        response = client.get(path, follow=True)
        assert response.status_code < 500 and response.status_code != 429, (path, response.status_code)
        body = readable(response)
        for marker in found:
            if marker in body:
                found[marker].add(route)
    return found


@pytest.mark.parametrize("who", ["anonymous", "someone"])
def test_no_route_shows_a_hidden_kernel_or_problem(world, who):
    found = walk_http(world, world.users.get(who))
    assert {marker: found[marker] for marker in HIDDEN} == {marker: set() for marker in HIDDEN}
    assert {"api/candidates/", "api/leaderboard/%(arch)s/export.jsonl"} <= found[PUBLIC_KERNEL]


def test_staff_still_find_them(world):
    found = walk_http(world, world.users["staff"])
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


# The site's WebSocket stack as config.asgi builds it (sessions and users), without the Origin check.
sockets = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))


def socket_paths(world: World) -> list[tuple[str, str]]:
    unfilled, walk = [], []
    for route, converters in routes(websocket_urlpatterns):
        walk += [(route, path) for path in fill(world, route, converters, unfilled)]
    assert not unfilled, f"the walk does not know how to fill these sockets' parameters: {unfilled}"
    return walk


async def listen(path: str, session_key: str | None) -> tuple[bool, str]:
    """Open the socket as the session's user; whether it opened, and everything it sent."""
    headers = [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={session_key}".encode())] if session_key else []
    communicator = WebsocketCommunicator(sockets, path, headers=headers)
    connected, _ = await communicator.connect()
    received = []
    if connected:
        while not await communicator.receive_nothing(timeout=0.2):
            received.append(await communicator.receive_json_from())
        await communicator.disconnect()
    return connected, json.dumps(received)


def session_of(user) -> str | None:
    if user is None:
        return None
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


async def walk_sockets(world: World, user) -> dict[str, str]:
    session_key = await sync_to_async(session_of)(user)
    paths = await sync_to_async(socket_paths)(world)
    answers = {}
    for _, path in paths:
        connected, sent = await listen(path, session_key)
        answers[path] = sent if connected else "refused"
    return answers


@pytest.mark.parametrize("who", ["anonymous", "someone"])
async def test_no_socket_opens_on_a_hidden_kernel_or_run(who):
    world = await sync_to_async(build_world)()
    answers = await walk_sockets(world, world.users.get(who))
    assert [path for path, sent in answers.items() if any(marker in sent for marker in HIDDEN)] == []
    hidden_paths = [f"/ws/kernels/{pk}/" for pk in hidden_kernels(world)] + [f"/ws/runs/{run.pk}/" for run in world.runs]
    assert {path: answers[path] for path in hidden_paths} == dict.fromkeys(hidden_paths, "refused")
    assert answers[f"/ws/leaderboard/{ARCH}/"] != "refused"


async def test_staff_sockets_replay_them():
    world = await sync_to_async(build_world)()
    answers = await walk_sockets(world, world.users["staff"])
    assert HIDDEN_KERNEL in answers[f"/ws/runs/{world.runs[0].pk}/"]
    assert HIDDEN_SOURCE in answers[f"/ws/runs/{world.runs[1].pk}/"]
    assert answers[f"/ws/kernels/{world.hidden_kernel.pk}/"] != "refused"


def test_a_route_the_walk_cannot_fill_fails_it(world):
    unfilled = []
    assert fill(world, "kernels/%(pk)s/lineage/%(ancestor)s/", {}, unfilled) == []
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
