"""Streamed deltas are sent at once, or held together while they come in quick succession (never
past the end of the window), and stored in batches, as are other events; a status change is stored
with everything before it, then sent. Nothing is lost or reordered."""

import threading
import time

import pytest
from django.db import connection

from court.models import OptimizationRun
from inference import transcript as transcript_module
from inference.transcript import Transcript, TranscriptWriter
from tests.court.factories import make_problem

# The writer stores from a thread of its own, which sees only committed rows.
pytestmark = pytest.mark.django_db(transaction=True)


def stored(run) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in run.events.order_by("seq")]


def wait_until(condition, timeout: float = 10) -> None:
    """For what a timer thread does: poll, since there is no event to await."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)


@pytest.fixture
def run():
    return OptimizationRun.objects.create(problem=make_problem())


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, str, int]]:
    """What the transcript publishes: (kind, text, seq)."""
    messages = []
    monkeypatch.setattr(
        transcript_module,
        "stream_to_group",
        lambda group, message: messages.append(tuple(message["event"][k] for k in ("kind", "text", "seq"))),
    )
    return messages


@pytest.fixture
def writer(monkeypatch) -> TranscriptWriter:
    """A writer whose batches wait an hour: only what the transcript flushes itself is stored."""
    slow = TranscriptWriter(interval_s=3600)
    monkeypatch.setattr(transcript_module, "writer", slow)
    return slow


def test_the_first_delta_goes_out_at_once_and_quick_followers_are_held_together(run, sent, writer, monkeypatch):
    monkeypatch.setattr(transcript_module, "DELTA_WINDOW_S", 3600)
    transcript = Transcript(run)
    transcript.append_delta("reasoning", "Reading ", round=1)
    assert sent == [("reasoning", "Reading ", 1)]
    transcript.append_delta("reasoning", "the ", round=1)
    transcript.append_delta("reasoning", "graph.", round=1)
    assert sent == [("reasoning", "Reading ", 1)]
    transcript.append_delta("answer", "```python", round=1)  # another kind: the held text goes first
    transcript.append("finished", round=1)  # any other event: everything held goes before it
    assert sent == [("reasoning", "Reading ", 1), ("reasoning", "the graph.", 2), ("answer", "```python", 3), ("finished", "", 4)]
    writer.flush()
    assert stored(run) == [(kind, text) for kind, text, _ in sent]


def test_events_other_than_a_status_change_are_sent_before_they_are_stored(run, sent, writer):
    transcript = Transcript(run)
    transcript.append("prompt", text="Make it faster.", round=1)
    transcript.append("finished", round=1)
    assert [(kind, seq) for kind, _, seq in sent] == [("prompt", 1), ("finished", 2)]
    assert stored(run) == []


def test_deltas_further_apart_than_the_window_each_go_out_at_once_before_they_are_stored(run, sent, writer, monkeypatch):
    monkeypatch.setattr(transcript_module, "DELTA_WINDOW_S", 0)
    transcript = Transcript(run)
    for word in ("a", "b", "c"):
        transcript.append_delta("reasoning", word, round=1)
    assert [text for _, text, _ in sent] == ["a", "b", "c"]
    assert stored(run) == []


def test_a_held_delta_goes_out_when_the_window_ends_though_no_other_follows(run, sent, writer, monkeypatch):
    monkeypatch.setattr(transcript_module, "DELTA_WINDOW_S", 0.2)
    transcript = Transcript(run)
    transcript.append_delta("reasoning", "a", round=1)
    transcript.append_delta("reasoning", "b", round=1)
    transcript.append_delta("reasoning", "c", round=1)
    assert sent == [("reasoning", "a", 1)]
    wait_until(lambda: len(sent) == 2)
    assert sent == [("reasoning", "a", 1), ("reasoning", "bc", 2)]


def test_flush_sends_what_is_held(run, sent, writer, monkeypatch):
    monkeypatch.setattr(transcript_module, "DELTA_WINDOW_S", 3600)
    transcript = Transcript(run)
    transcript.append_delta("answer", "x", round=1)
    transcript.append_delta("answer", "y", round=1)
    transcript.flush()
    transcript.flush()
    assert sent == [("answer", "x", 1), ("answer", "y", 2)]


def test_a_status_change_stores_every_event_before_it(run, sent, writer, monkeypatch):
    monkeypatch.setattr(transcript_module, "DELTA_WINDOW_S", 0)
    transcript = Transcript(run)
    transcript.append_delta("answer", "No kernel.", round=1)
    transcript.append("no_candidate", text="No code block.", round=1)
    run.status = OptimizationRun.Status.DONE
    transcript.status(round=1)
    assert stored(run) == [("answer", "No kernel."), ("no_candidate", "No code block."), ("status", "Done")]
    assert [kind for kind, _, _ in sent] == ["answer", "no_candidate", "status"]


def test_the_run_row_takes_its_new_status_only_once_the_transcript_is_stored(run, sent, writer):
    """A reader who sees the run finished finds its whole transcript (CI once read a cancelled run
    whose status event was not stored yet)."""
    transcript = Transcript(run)
    transcript.append("prompt", text="Optimize.", round=1)
    run.status = OptimizationRun.Status.CANCELLED
    at_save = []
    transcript.status(round=1, save_run=lambda: at_save.append((stored(run), list(sent))))
    ((stored_then, sent_then),) = at_save
    assert stored_then == [("prompt", "Optimize."), ("status", run.get_status_display())]
    assert [kind for kind, _, _ in sent_then] == ["prompt"]  # the status goes out after the row is saved
    assert [kind for kind, _, _ in sent] == ["prompt", "status"]


def test_the_writer_stores_published_deltas_within_its_interval(run, sent, monkeypatch):
    monkeypatch.setattr(transcript_module, "DELTA_WINDOW_S", 0)
    monkeypatch.setattr(transcript_module, "writer", TranscriptWriter(interval_s=0.05))
    transcript = Transcript(run)
    for word in ("a", "b", "c"):
        transcript.append_delta("reasoning", word, round=1)
    wait_until(lambda: len(stored(run)) == 3)
    assert stored(run) == [("reasoning", "a"), ("reasoning", "b"), ("reasoning", "c")]


def test_runs_on_many_threads_store_every_event_once_in_order(sent, writer, monkeypatch):
    monkeypatch.setattr(transcript_module, "DELTA_WINDOW_S", 0)
    problem = make_problem()
    runs = [OptimizationRun.objects.create(problem=problem) for _ in range(4)]

    def stream(run):
        transcript = Transcript(run)
        for index in range(50):
            transcript.append_delta("reasoning", f"{index} ", round=1)
            if index % 10 == 0:
                writer.flush()  # batches from several threads, as the writer's own thread does
        transcript.status(round=1)
        connection.close()

    threads = [threading.Thread(target=stream, args=(run,)) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for run in runs:
        assert list(run.events.order_by("seq").values_list("seq", flat=True)) == list(range(1, 52))
        assert "".join(text for _, text in stored(run)[:-1]) == "".join(f"{index} " for index in range(50))


def test_events_of_a_deleted_run_are_dropped_and_the_others_stored(sent, writer, monkeypatch):
    monkeypatch.setattr(transcript_module, "DELTA_WINDOW_S", 0)
    problem = make_problem()
    kept, deleted = (OptimizationRun.objects.create(problem=problem) for _ in range(2))
    Transcript(kept).append_delta("reasoning", "kept", round=1)
    Transcript(deleted).append_delta("reasoning", "gone", round=1)
    OptimizationRun.objects.filter(pk=deleted.pk).delete()
    writer.flush()
    assert stored(kept) == [("reasoning", "kept")]
