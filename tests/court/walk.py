"""A walk of every route of the URLconf and every WebSocket route, its parameters aimed at chosen
objects, as a given user: what each answer says, for tests that something appears nowhere it must
not (tests/court/test_hidden_walk.py, tests/court/test_internal_details.py).

The routes are read from the URLconf and config.routing, so a new route is walked as soon as it
exists; one whose parameters the walk cannot fill fails the walk until PARAMETERS says how.
"""

import io
import itertools
import json
import zipfile
from dataclasses import dataclass, field
from urllib.parse import urlencode

from asgiref.sync import sync_to_async
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.core.cache import cache
from django.test import Client
from django.urls import URLResolver, get_resolver, resolve
from django.utils.regex_helper import normalize

from config.routing import websocket_urlpatterns
from court.models import Candidate, Evaluation, ProofCheck, RunEvent


@dataclass
class Targets:
    """What the walk aims each route's parameters at: ids, and the users the admin's user pages show."""

    problems: list[int]
    kernels: list[int]
    runs: list[int]
    reports: list[int]
    users: list = field(default_factory=list)
    workers: list[int] = field(default_factory=list)
    arch: str = "cpu"
    other_arch: str = "cpu"  # compared with `arch` (the same: the comparison sends to its board)

    def evaluations(self) -> list[int]:
        return list(Evaluation.objects.filter(candidate__in=self.kernels).values_list("pk", flat=True))

    def admin_objects(self, route: str) -> list:
        """An admin page of one object: the targets of its model, else any."""
        chosen = {
            "candidate": self.kernels,
            "problem": self.problems,
            "optimizationrun": self.runs,
            "hackreport": self.reports,
            "evaluation": self.evaluations(),
            "runevent": list(RunEvent.objects.filter(run__in=self.runs).values_list("pk", flat=True)),
            "proofcheck": list(ProofCheck.objects.filter(report__in=self.reports).values_list("pk", flat=True)),
            "gpuworker": self.workers,
        }
        return chosen.get(route.split("/")[2]) or [1]

    def query(self) -> str:
        """Query parameters that name the targets, for routes that filter or prefill by them."""
        problem, kernel, run = self.problems[0], self.kernels[0], self.runs[0]
        return urlencode({"example": problem, "problem": problem, "candidate": kernel, "run": run, "curation": "hidden"})


# Each parameter, by where its route starts (the longest start wins): the values it is walked
# with. A route with a parameter no entry fills fails the walk.
PARAMETERS = [
    ("problems/", "pk", lambda targets, route: targets.problems),
    ("kernels/", "pk", lambda targets, route: targets.kernels),
    ("runs/", "pk", lambda targets, route: targets.runs),
    ("leaderboard/", "arch", lambda targets, route: [targets.arch]),
    ("leaderboard/", "other", lambda targets, route: [targets.other_arch]),
    ("api/", "format", lambda targets, route: ["json"]),
    ("api/problems/", "pk", lambda targets, route: targets.problems),
    ("api/candidates/", "pk", lambda targets, route: targets.kernels),
    ("api/kernels/", "pk", lambda targets, route: targets.kernels),
    ("api/evaluations/", "pk", lambda targets, route: targets.evaluations()),
    ("api/reports/", "pk", lambda targets, route: targets.reports),
    ("api/runs/", "pk", lambda targets, route: targets.runs),
    ("api/leaderboard/", "arch", lambda targets, route: [targets.arch]),
    ("audit/", "source", lambda targets, route: ["cuda-l1"]),
    ("audit/", "arch", lambda targets, route: [targets.arch]),
    ("api/audit/", "source", lambda targets, route: ["cuda-l1"]),
    ("api/audit/", "arch", lambda targets, route: [targets.arch]),
    ("admin/", "object_id", lambda targets, route: targets.admin_objects(route)),
    ("admin/", "id", lambda targets, route: [user.pk for user in targets.users]),
    ("admin/", "app_label", lambda targets, route: ["kernels"]),
    ("admin/", "url", lambda targets, route: [f"kernels/candidate/{targets.kernels[0]}/"]),
    ("admin/r/", "content_type_id", lambda targets, route: [ContentType.objects.get_for_model(Candidate).pk]),
    ("admin/r/", "object_id", lambda targets, route: targets.kernels),
    ("accounts/reset/", "uidb64", lambda targets, route: ["MQ"]),
    ("accounts/reset/", "token", lambda targets, route: ["set-password"]),
    ("ws/runs/", "run_id", lambda targets, route: targets.runs),
    ("ws/kernels/", "candidate_id", lambda targets, route: targets.kernels),
    ("ws/leaderboard/", "arch", lambda targets, route: [targets.arch]),
]


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


def fill(targets: Targets, route: str, converters: dict, unfilled: list[str]) -> list[str]:
    """The paths the walk takes for `route`: every combination of its parameters' values."""
    names = sorted({part.split(")s")[0] for part in route.split("%(")[1:]})
    choices = []
    for name in names:
        rules = [(start, values) for start, param, values in PARAMETERS if param == name and route.startswith(start)]
        if not rules:
            unfilled.append(f"{route}: {name}")
            return []
        values = max(rules, key=lambda rule: len(rule[0]))[1](targets, route)
        to_url = converters[name].to_url if name in converters else str
        choices.append([to_url(value) for value in values])
    return ["/" + route % dict(zip(names, combination)) for combination in itertools.product(*choices)]


def http_paths(targets: Targets) -> list[tuple[str, str]]:
    """(route, path) for every HTTP route: filled, and those without parameters also with the targets' query."""
    unfilled, walk = [], []
    for route, converters in routes(get_resolver().url_patterns):
        paths = fill(targets, route, converters, unfilled)
        for path in paths:
            resolve(path)  # the filling fits the route's converters
            walk.append((route, path))
        if "%(" not in route:
            walk.append((route, f"{paths[0]}?{targets.query()}"))
    assert not unfilled, f"the walk does not know how to fill these routes' parameters: {unfilled}"
    return walk


def readable(response) -> str:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    if body.startswith(b"PK\x03\x04"):  # a zip (the bundle): what it holds
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            body = b"\n".join(archive.read(name) for name in archive.namelist())
    return body.decode(errors="replace")


def walk_http(targets: Targets, user, markers) -> dict[str, set[str]]:
    """GET every path as `user` (None: anonymous), following redirects; for each marker, the routes
    whose answer holds it."""
    client = Client()
    if user is not None:
        client.force_login(user)
    found = {marker: set() for marker in markers}
    for route, path in http_paths(targets):
        cache.clear()  # the throttles would answer 429 long before the walk ends
        response = client.get(path, follow=True)
        assert response.status_code < 500 and response.status_code != 429, (path, response.status_code)
        body = readable(response)
        for marker in found:
            if marker in body:
                found[marker].add(route)
    return found


# The site's WebSocket stack as config.asgi builds it (sessions and users), without the Origin check.
sockets = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))


def socket_paths(targets: Targets) -> list[tuple[str, str]]:
    unfilled, walk = [], []
    for route, converters in routes(websocket_urlpatterns):
        walk += [(route, path) for path in fill(targets, route, converters, unfilled)]
    assert not unfilled, f"the walk does not know how to fill these sockets' parameters: {unfilled}"
    return walk


async def listen(path: str, session_key: str | None) -> tuple[bool, str]:
    """Open the socket as the session's user; whether it opened, and everything it sent."""
    headers = [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={session_key}".encode())] if session_key else []
    communicator = WebsocketCommunicator(sockets, path, headers=headers)
    connected, _ = await communicator.connect(timeout=10)
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


async def walk_sockets(targets: Targets, user) -> dict[str, str]:
    """Every socket path, opened as `user`: everything it sent, or "refused"."""
    session_key = await sync_to_async(session_of)(user)
    paths = await sync_to_async(socket_paths)(targets)
    answers = {}
    for _, path in paths:
        connected, sent = await listen(path, session_key)
        answers[path] = sent if connected else "refused"
    return answers
