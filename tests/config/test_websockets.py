"""The site's sockets, through the stack daphne serves: only from our own origin, only for what
exists, and deaf to whatever a client sends."""

import logging

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from config.routing import websocket_application
from evaluation.harness import HARNESS_VERSION
from kernels.consumers import NOT_FOUND
from kernels.events import run_group
from kernels.models import Evaluation, OptimizationRun
from tests.kernels.factories import make_candidate, make_problem

pytestmark = pytest.mark.django_db(transaction=True)

SITE = "127.0.0.1:8000"


def socket(path: str, *, origin: str | None = f"http://{SITE}", host: str = SITE) -> WebsocketCommunicator:
    headers = [(b"host", host.encode())] + ([(b"origin", origin.encode())] if origin else [])
    return WebsocketCommunicator(websocket_application, path, headers=headers)


async def opens(communicator) -> bool:
    connected, _ = await communicator.connect()
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
    assert (await communicator.connect())[0]
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
        assert await socket(path).connect() == (False, NOT_FOUND), path


async def test_sockets_for_a_kernel_and_an_architecture_that_exist_open():
    def evaluated():
        candidate = make_candidate(scale=3)
        Evaluation.objects.create(candidate=candidate, arch="h100", harness_version=HARNESS_VERSION)
        return candidate

    candidate = await sync_to_async(evaluated)()
    assert await opens(socket(f"/ws/kernels/{candidate.pk}/"))
    assert await opens(socket("/ws/leaderboard/h100/"))
