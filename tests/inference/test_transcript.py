"""Streamed deltas are stored and sent at once, or held together while they come in quick
succession; nothing is lost, reordered or held past the next other event."""

import pytest

from inference import transcript as transcript_module
from inference.transcript import Transcript
from kernels.models import OptimizationRun
from tests.kernels.factories import make_problem

pytestmark = pytest.mark.django_db


def stored(run) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in run.events.order_by("seq")]


@pytest.fixture
def run():
    return OptimizationRun.objects.create(problem=make_problem())


def test_the_first_delta_goes_out_at_once_and_quick_followers_are_held_together(run, monkeypatch):
    monkeypatch.setattr(transcript_module, "DELTA_WINDOW_S", 3600)
    transcript = Transcript(run)
    transcript.append_delta("reasoning", "Reading ", round=1)
    assert stored(run) == [("reasoning", "Reading ")]
    transcript.append_delta("reasoning", "the ", round=1)
    transcript.append_delta("reasoning", "graph.", round=1)
    assert stored(run) == [("reasoning", "Reading ")]
    transcript.append_delta("answer", "```python", round=1)  # another kind: the held text goes first
    transcript.append("finished", round=1)  # any other event: everything held goes before it
    assert stored(run) == [("reasoning", "Reading "), ("reasoning", "the graph."), ("answer", "```python"), ("finished", "")]


def test_deltas_further_apart_than_the_window_each_go_out_at_once(run, monkeypatch):
    monkeypatch.setattr(transcript_module, "DELTA_WINDOW_S", 0)
    transcript = Transcript(run)
    for word in ("a", "b", "c"):
        transcript.append_delta("reasoning", word, round=1)
    assert stored(run) == [("reasoning", "a"), ("reasoning", "b"), ("reasoning", "c")]


def test_flush_stores_what_is_held(run, monkeypatch):
    monkeypatch.setattr(transcript_module, "DELTA_WINDOW_S", 3600)
    transcript = Transcript(run)
    transcript.append_delta("answer", "x", round=1)
    transcript.append_delta("answer", "y", round=1)
    transcript.flush()
    transcript.flush()
    assert stored(run) == [("answer", "x"), ("answer", "y")]
