"""A run one of whose kernels staff hid stays open to whoever could see it, with every trace of that
kernel removed: its page, its API answer and its socket's replay show the rest of the run and say
that something was removed by staff (issue 33, item 2). Staff still see it all, marked as hidden."""

import json

import pytest
from asgiref.sync import sync_to_async
from channels.auth import AuthMiddlewareStack
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import get_user_model

from config.routing import websocket_urlpatterns
from court.curation import curate_kernel
from court.live.events import evaluation_event, run_group
from court.models import Candidate, OptimizationRun, RunEvent
from tests.court.factories import CANDIDATE_SOURCE, make_candidate, make_evaluation, make_problem
from tests.court.walk import session_of

pytestmark = pytest.mark.django_db(transaction=True)

# Unique words in the hidden kernel's code (quoted by its round's answer, its verdicts and the next
# round's prompt), in what the model wrote around it, and in the listed kernel's code.
HIDDEN_CODE = "hidden_kernel_text_4d1a"
HIDDEN_REASONING = "reasoning_about_the_hidden_one_77c2"
LISTED_CODE = "listed_kernel_text_e905"
REMOVED = "Removed by staff"

sockets = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))


def status(name: str, round: int, rounds_completed: int) -> tuple:
    return ("status", round, name.capitalize(), {"status": name, "rounds_completed": rounds_completed, "error": ""})


def announced(kernel: Candidate) -> tuple:
    data = {"candidate": kernel.pk, "language": kernel.language, "url": kernel.get_absolute_url()}
    return ("candidate", kernel.round, kernel.code, data)


def fed_back(kernel: Candidate) -> tuple:
    return ("verdicts", kernel.round, "", {"candidate": kernel.pk, "verdicts": [{"code": kernel.code, "round": kernel.round}]})


def two_round_run(*, hidden: bool = True) -> tuple[OptimizationRun, Candidate, Candidate]:
    """A finished public run: kernel #1 of round 1 (hidden by staff unless `hidden` is false) and
    kernel #2 of round 2, listed, both verified."""
    problem = make_problem(scale=3)
    run = OptimizationRun.objects.create(problem=problem, status="done", max_rounds=2, rounds_completed=2)
    first = make_candidate(
        problem=problem, run=run, round=1, origin="model", code=f"# {HIDDEN_CODE}\n" + CANDIDATE_SOURCE.format(scale=3)
    )
    second = make_candidate(
        problem=problem, run=run, round=2, origin="model", code=f"# {LISTED_CODE}\n" + CANDIDATE_SOURCE.format(scale=3)
    )
    for kernel in (first, second):
        make_evaluation(kernel, speedup_eager=1.5)
    events = [
        status("running", 1, 0),
        ("prompt", 1, problem.source, {}),
        ("reasoning", 1, f"Think: {HIDDEN_REASONING}.", {}),
        ("answer", 1, f"```python\n{first.code}```", {}),
        announced(first),
        fed_back(first),
        status("running", 2, 1),
        ("prompt", 2, f"{problem.source}\nYour last kernel:\n{first.code}", {}),
        ("reasoning", 2, "Now improve on it.", {}),
        ("answer", 2, f"```python\n{second.code}```", {}),
        announced(second),
        fed_back(second),
        status("done", 2, 2),
    ]
    for seq, (kind, round, text, data) in enumerate(events, start=1):
        RunEvent.objects.create(run=run, seq=seq, kind=kind, round=round, text=text, data=data)
    if hidden:
        first.curate(state="hidden", by=None)
    return run, first, second


def staff_user():
    return get_user_model().objects.create_user("curator", is_staff=True)


def test_the_run_page_shows_what_is_visible_and_says_a_kernel_was_removed(client):
    run, hidden, listed = two_round_run()
    response = client.get(run.get_absolute_url())
    assert response.status_code == 200
    content = response.content.decode()
    assert LISTED_CODE in content and f'data-candidate="{listed.pk}"' in content
    assert content.count(REMOVED) == 1
    for trace in (HIDDEN_CODE, HIDDEN_REASONING, hidden.get_absolute_url(), f'data-candidate="{hidden.pk}"'):
        assert trace not in content


def test_staff_see_the_hidden_kernel_on_the_run_page_marked_as_hidden(client):
    run, hidden, _ = two_round_run()
    client.force_login(staff_user())
    content = client.get(run.get_absolute_url()).content.decode()
    assert HIDDEN_CODE in content and HIDDEN_REASONING in content
    assert "Hidden by staff" in content and REMOVED not in content


def test_the_api_answers_the_run_without_its_hidden_kernel(client):
    run, hidden, listed = two_round_run()
    response = client.get(f"/api/runs/{run.pk}/")
    assert response.status_code == 200
    assert response.json()["candidates"] == [listed.pk]


def test_staff_read_every_kernel_of_the_run_in_the_api(client):
    run, hidden, listed = two_round_run()
    client.force_login(staff_user())
    assert sorted(client.get(f"/api/runs/{run.pk}/").json()["candidates"]) == [hidden.pk, listed.pk]


def test_the_run_still_follows_its_visibility_otherwise(client):
    run, _, _ = two_round_run()
    run.problem.visibility = "hidden"
    run.problem.save()
    assert client.get(run.get_absolute_url()).status_code == 404


async def replay(run_id: int, user=None) -> list[dict]:
    communicator = await open_socket(run_id, user)
    messages = await until_replayed(communicator)
    await communicator.disconnect()
    return messages


async def open_socket(run_id: int, user=None) -> WebsocketCommunicator:
    session_key = await sync_to_async(session_of)(user)
    headers = [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={session_key}".encode())] if session_key else []
    communicator = WebsocketCommunicator(sockets, f"/ws/runs/{run_id}/", headers=headers)
    connected, _ = await communicator.connect(timeout=10)
    assert connected
    return communicator


async def until_replayed(communicator) -> list[dict]:
    messages = []
    while (message := await communicator.receive_json_from(timeout=5))["kind"] != "replayed":
        messages.append(message)
    return messages


def traces_of(kernel: Candidate) -> list[str]:
    return [HIDDEN_CODE, HIDDEN_REASONING, kernel.get_absolute_url(), f'"candidate": {kernel.pk}']


async def test_the_socket_replays_the_run_without_the_hidden_kernel():
    run, hidden, listed = await sync_to_async(two_round_run)()
    messages = await replay(run.pk)
    sent = json.dumps(messages)
    assert [trace for trace in traces_of(hidden) if trace in sent] == []
    assert LISTED_CODE in sent
    assert {m["round"] for m in messages if m["kind"] == "removed"} == {1}
    assert {m["candidate"] for m in messages if m["kind"] == "evaluation"} == {listed.pk}
    # Every stored event is accounted for by number, so the live stream goes on without a gap.
    assert max(m.get("seq") or 0 for m in messages) == await sync_to_async(run.events.count)()


async def test_staff_sockets_replay_the_hidden_kernel_marked():
    run, hidden, _ = await sync_to_async(two_round_run)()
    messages = await replay(run.pk, await sync_to_async(staff_user)())
    shown = [m for m in messages if m["kind"] == "candidate" and m["data"]["candidate"] == hidden.pk]
    assert len(shown) == 1 and shown[0]["data"]["hidden"] is True and HIDDEN_CODE in shown[0]["text"]


async def test_hiding_a_kernel_replays_open_sockets_without_it():
    run, first, _ = await sync_to_async(two_round_run)(hidden=False)
    communicator = await open_socket(run.pk)
    assert HIDDEN_CODE in json.dumps(await until_replayed(communicator))

    await sync_to_async(curate_kernel)(candidate=first, state="hidden", by=None)
    again = await until_replayed(communicator)
    assert again[0]["replay"] is True  # the page rebuilds its transcript from this replay
    assert [trace for trace in traces_of(first) if trace in json.dumps(again)] == []
    assert LISTED_CODE in json.dumps(again)
    await communicator.disconnect()


async def test_live_events_about_the_hidden_kernel_are_redacted_too():
    run, hidden, listed = await sync_to_async(two_round_run)()
    communicator = await open_socket(run.pk)
    await until_replayed(communicator)
    evaluation = await sync_to_async(hidden.evaluations.get)()
    layer = get_channel_layer()
    for event in (
        evaluation_event(evaluation),
        {
            "kind": "verdicts",
            "seq": 14,
            "round": 1,
            "text": "",
            "data": {"candidate": hidden.pk, "verdicts": [{"code": hidden.code}]},
        },
    ):
        await layer.group_send(run_group(run.pk), {"type": "court.event", "event": event})
    live = await communicator.receive_json_from(timeout=5)
    assert (live["kind"], live["seq"], live["data"]) == ("removed", 14, {})
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()
