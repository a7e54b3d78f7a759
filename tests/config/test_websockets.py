"""The site's sockets, through the stack daphne serves: only from our own origin, only for what
exists, and deaf to whatever a client sends."""

import logging

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from config.routing import websocket_application
from court import curation
from court.consumers import NOT_FOUND
from court.live.events import candidate_group, run_group
from court.models import Curation, Evaluation, OptimizationRun
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import make_candidate, make_problem

pytestmark = pytest.mark.django_db(transaction=True)

SITE = "127.0.0.1:8000"
# A handshake answers at once on an idle machine; a loaded CI runner took over channels' 1 s default.
CONNECT_S = 10


def socket(path: str, *, origin: str | None = f"http://{SITE}", host: str = SITE) -> WebsocketCommunicator:
    headers = [(b"host", host.encode())] + ([(b"origin", origin.encode())] if origin else [])
    return WebsocketCommunicator(websocket_application, path, headers=headers)


async def opens(communicator) -> bool:
    connected, _ = await communicator.connect(timeout=CONNECT_S)
    if connected:
        await communicator.disconnect()
    return connected


@pytest.fixture
async def run():
    return await sync_to_async(lambda: OptimizationRun.objects.create(problem=make_problem()))()


async def test_a_page_of_this_site_opens_a_socket(run):
    assert await opens(socket(f"/ws/runs/{run.pk}/"))


@pytest.mark.parametrize(
    "origin,host",
    [
        ("http://127.0.0.1:9999", SITE),  # another service on the same host
        ("http://evil.example", SITE),
        ("http://evil.example:8000", "evil.example:8000"),  # a host that is not ours (DNS rebinding)
        (None, SITE),
    ],
)
async def test_a_socket_from_another_origin_is_refused(run, origin, host):
    assert not await opens(socket(f"/ws/runs/{run.pk}/", origin=origin, host=host))


async def test_a_trusted_origin_opens_a_socket(run, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://court.example"]
    assert await opens(socket(f"/ws/runs/{run.pk}/", origin="https://court.example"))


async def test_a_frame_that_is_not_json_is_ignored_and_the_socket_stays_open(run, caplog):
    communicator = socket(f"/ws/runs/{run.pk}/")
    assert (await communicator.connect(timeout=CONNECT_S))[0]
    while (await communicator.receive_json_from(timeout=5))["kind"] != "replayed":
        pass
    with caplog.at_level(logging.WARNING):
        await communicator.send_to(text_data="not json {")
        await communicator.send_to(bytes_data=b"\x00\xff")
        await get_channel_layer().group_send(run_group(run.pk), {"type": "court.event", "event": {"kind": "status"}})
        assert await communicator.receive_json_from(timeout=5) == {"kind": "status"}
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING]
    await communicator.disconnect()


async def test_sockets_for_what_does_not_exist_are_refused(run):
    for path in (f"/ws/runs/{run.pk + 1}/", "/ws/kernels/999999/", "/ws/leaderboard/h100/"):
        assert await socket(path).connect(timeout=CONNECT_S) == (False, NOT_FOUND), path


async def test_sockets_for_a_kernel_and_an_architecture_that_exist_open():
    def evaluated():
        candidate = make_candidate(scale=3)
        Evaluation.objects.create(candidate=candidate, arch="h100", harness_version=HARNESS_VERSION)
        return candidate

    candidate = await sync_to_async(evaluated)()
    assert await opens(socket(f"/ws/kernels/{candidate.pk}/"))
    assert await opens(socket("/ws/leaderboard/h100/"))


async def test_hiding_what_a_socket_follows_closes_it():
    """Staff hide a kernel: its open socket closes (as a 404), its run's replays without it; then
    its problem: the run's closes too."""

    def kernel_of_a_run():
        run = OptimizationRun.objects.create(problem=make_problem(scale=5))
        return make_candidate(problem=run.problem, scale=5, run=run, round=1)

    candidate = await sync_to_async(kernel_of_a_run)()
    kernel_socket, run_socket = socket(f"/ws/kernels/{candidate.pk}/"), socket(f"/ws/runs/{candidate.run_id}/")
    assert (await kernel_socket.connect(timeout=CONNECT_S))[0] and (await run_socket.connect(timeout=CONNECT_S))[0]
    while (await run_socket.receive_json_from(timeout=5))["kind"] != "replayed":
        pass

    await sync_to_async(curation.curate_kernel)(candidate=candidate, state=Curation.HIDDEN, by=None, reason="leaks a key")
    assert await kernel_socket.receive_output(timeout=5) == {"type": "websocket.close", "code": NOT_FOUND}
    assert await run_socket.receive_json_from(timeout=5) == {"kind": "replayed", "seq": 0}

    await sync_to_async(curation.set_problem_visibility)(problem=candidate.problem, visibility="hidden", by=None)
    assert await run_socket.receive_output(timeout=5) == {"type": "websocket.close", "code": NOT_FOUND}


async def test_a_problem_hidden_closes_its_kernels_sockets_and_leaves_others_open():
    def two_kernels():
        return make_candidate(scale=5), make_candidate(scale=6)

    hidden, other = await sync_to_async(two_kernels)()
    closing, staying = socket(f"/ws/kernels/{hidden.pk}/"), socket(f"/ws/kernels/{other.pk}/")
    assert (await closing.connect(timeout=CONNECT_S))[0] and (await staying.connect(timeout=CONNECT_S))[0]

    await sync_to_async(curation.set_problem_visibility)(problem=hidden.problem, visibility="hidden", by=None)
    assert await closing.receive_output(timeout=5) == {"type": "websocket.close", "code": NOT_FOUND}
    await get_channel_layer().group_send(candidate_group(other.pk), {"type": "court.recheck"})  # looks again, may still see
    assert await staying.receive_nothing(timeout=0.5)
    await staying.disconnect()


async def test_a_leaderboard_socket_hears_of_listed_kernels_verdicts_alone():
    from court.live.progress import publish_evaluation
    from tests.court.factories import make_evaluation

    def verdicts():
        listed = make_evaluation(make_candidate(scale=5), arch="h100")
        hidden = make_evaluation(make_candidate(scale=6, curation=Curation.HIDDEN), arch="h100")
        return listed, hidden

    listed, hidden = await sync_to_async(verdicts)()
    board = socket("/ws/leaderboard/h100/")
    assert (await board.connect(timeout=CONNECT_S))[0]
    await sync_to_async(publish_evaluation)(hidden)
    await sync_to_async(publish_evaluation)(listed)
    assert (await board.receive_json_from(timeout=5))["evaluation"] == listed.pk
    assert await board.receive_nothing(timeout=0.3)
    await board.disconnect()
