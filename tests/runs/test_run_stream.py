"""A run's page replays its stored transcript on connect and then continues live, with no gap."""

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from config.routing import websocket_urlpatterns
from court.models import OptimizationRun
from inference import consumers
from inference import transcript as transcript_module
from inference.transcript import Transcript, TranscriptWriter
from tests.court.factories import make_problem

pytestmark = pytest.mark.django_db(transaction=True)

application = URLRouter(websocket_urlpatterns)


def new_run() -> OptimizationRun:
    return OptimizationRun.objects.create(problem=make_problem())


async def connect(run_id: int) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(application, f"/ws/runs/{run_id}/")
    connected, _ = await communicator.connect(timeout=10)
    assert connected
    return communicator


async def receive_until_replayed(communicator) -> list[dict]:
    messages = []
    while True:
        message = await communicator.receive_json_from(timeout=5)
        if message["kind"] == "replayed":
            return messages
        messages.append(message)


async def test_a_late_visitor_gets_the_stored_transcript_merged_then_live_deltas():
    run = await sync_to_async(new_run)()
    transcript = await sync_to_async(Transcript)(run)
    for word in ("Reading ", "the ", "graph."):
        await sync_to_async(transcript.append)("reasoning", text=word, round=1)
    await sync_to_async(transcript_module.writer.flush)()
    communicator = await connect(run.pk)
    replay = await receive_until_replayed(communicator)
    assert [(m["kind"], m["text"], m["seq"]) for m in replay] == [("reasoning", "Reading the graph.", 3)]
    assert all(m["replay"] for m in replay)

    await sync_to_async(transcript.append)("answer", text="```python", round=1)
    live = await communicator.receive_json_from(timeout=5)
    assert (live["kind"], live["text"], live["seq"]) == ("answer", "```python", 4)
    await communicator.disconnect()


async def test_events_stored_while_connecting_are_delivered_once():
    run = await sync_to_async(new_run)()
    transcript = await sync_to_async(Transcript)(run)
    await sync_to_async(transcript.append)("reasoning", text="a", round=1)
    communicator = await connect(run.pk)
    await sync_to_async(transcript.append)("reasoning", text="b", round=1)
    received = await receive_until_replayed(communicator)
    while not await communicator.receive_nothing(timeout=0.3):
        received.append(await communicator.receive_json_from())
    texts = "".join(m["text"] for m in received if m["kind"] == "reasoning")
    assert texts == "ab"
    await communicator.disconnect()


async def test_the_socket_ignores_what_the_browser_sends():
    run = await sync_to_async(new_run)()
    communicator = await connect(run.pk)
    await receive_until_replayed(communicator)
    await communicator.send_json_to({"kind": "answer", "text": "injected"})
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


@pytest.fixture
def writer(monkeypatch) -> TranscriptWriter:
    """A writer whose batches wait an hour: deltas stay unstored until the test flushes it."""
    slow = TranscriptWriter(interval_s=3600)
    monkeypatch.setattr(transcript_module, "writer", slow)
    monkeypatch.setattr(transcript_module, "DELTA_WINDOW_S", 0)
    return slow


async def receive_all(communicator) -> list[dict]:
    received = []
    while not await communicator.receive_nothing(timeout=0.3):
        received.append(await communicator.receive_json_from())
    return received


async def test_a_reload_while_deltas_are_not_stored_yet_gets_every_delta_once_in_order(writer):
    run = await sync_to_async(new_run)()
    transcript = await sync_to_async(Transcript)(run)
    for word in ("a", "b"):
        await sync_to_async(transcript.append_delta)("reasoning", word, round=1)
    await sync_to_async(writer.flush)()
    await sync_to_async(transcript.append_delta)("reasoning", "c", round=1)  # published, not stored

    communicator = await connect(run.pk)
    replay = await receive_until_replayed(communicator)
    assert [(m["text"], m["seq"]) for m in replay] == [("ab", 2)]
    await sync_to_async(transcript.append_delta)("reasoning", "d", round=1)  # live: 3 is missing
    await sync_to_async(writer.flush)()
    live = await receive_all(communicator)
    assert [(m["text"], m["seq"]) for m in live] == [("c", 3), ("d", 4)]
    await communicator.disconnect()


async def test_a_reload_before_the_prompt_is_stored_gets_it_once_in_order(writer):
    run = await sync_to_async(new_run)()
    transcript = await sync_to_async(Transcript)(run)
    await sync_to_async(transcript.status)(round=1)
    await sync_to_async(transcript.append)("prompt", text="Make it faster.", round=1)  # published, not stored

    communicator = await connect(run.pk)
    replay = await receive_until_replayed(communicator)
    assert [(m["kind"], m["seq"]) for m in replay] == [("status", 1)]
    await sync_to_async(transcript.append_delta)("reasoning", "a", round=1)
    await sync_to_async(writer.flush)()
    live = await receive_all(communicator)
    assert [(m["kind"], m["seq"]) for m in live] == [("prompt", 2), ("reasoning", 3)]
    await communicator.disconnect()


async def test_a_visitor_from_the_start_gets_deltas_before_they_are_stored(writer):
    run = await sync_to_async(new_run)()
    transcript = await sync_to_async(Transcript)(run)
    communicator = await connect(run.pk)
    await receive_until_replayed(communicator)
    for word in ("a", "b"):
        await sync_to_async(transcript.append_delta)("reasoning", word, round=1)
    live = await receive_all(communicator)
    assert [(m["text"], m["seq"]) for m in live] == [("a", 1), ("b", 2)]
    assert await sync_to_async(run.events.count)() == 0
    await communicator.disconnect()


async def test_deltas_a_dead_worker_never_stored_do_not_stop_the_page(writer, monkeypatch):
    monkeypatch.setattr(consumers, "MISSED_EVENTS_WAIT_S", 0.3)
    run = await sync_to_async(new_run)()
    transcript = await sync_to_async(Transcript)(run)
    await sync_to_async(transcript.append_delta)("reasoning", "lost", round=1)
    communicator = await connect(run.pk)
    assert await receive_until_replayed(communicator) == []
    monkeypatch.setattr(transcript_module, "writer", TranscriptWriter(interval_s=3600))  # the pending delta is gone
    await sync_to_async(transcript.append)("finished", round=1)
    live = await communicator.receive_json_from(timeout=5)
    if live["seq"] == 1:  # the lost delta's own send reached the group after the socket joined it
        live = await communicator.receive_json_from(timeout=5)
    assert (live["kind"], live["seq"]) == ("finished", 2)
    await communicator.disconnect()


async def test_a_resumed_run_never_reuses_a_number_a_viewer_received(writer, monkeypatch):
    run = await sync_to_async(new_run)()
    dead_loop = await sync_to_async(Transcript)(run)
    await sync_to_async(dead_loop.append)("reasoning", text="stored", round=1)
    await sync_to_async(transcript_module.writer.flush)()
    communicator = await connect(run.pk)
    await receive_until_replayed(communicator)
    monkeypatch.setattr(transcript_module, "writer", TranscriptWriter(interval_s=3600))  # its process dies
    await sync_to_async(dead_loop.append)("reasoning", text="seen live, never stored", round=1)
    assert (await communicator.receive_json_from(timeout=5))["seq"] == 2
    monkeypatch.undo()

    resumed = await sync_to_async(Transcript)(run)  # the loop the reconciler started
    await sync_to_async(resumed.append)("reasoning", text="after the resume", round=1)

    live = await communicator.receive_json_from(timeout=1)  # no wait for the lost event
    assert (live["text"], live["data"]["resumes_after"]) == ("after the resume", live["seq"] - 1)
    assert live["seq"] > 2
    await communicator.disconnect()
