"""A speedup whose 95% interval reaches within 1% of 1 reads "no measurable difference" wherever a
speedup is shown, and is never counted as a win: the leaderboard's rows and counts, the API, the
kernel, problem and run pages, and the live events."""

import pytest
from django.test import Client

from court.leaderboard import board
from court.live.events import evaluation_event
from court.models import Evaluation, OptimizationRun
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import make_candidate, make_problem
from tests.court.test_kernel_page import VERDICT
from verification.evaluations import record_verdict

pytestmark = pytest.mark.django_db

NOISE = "no measurable difference"
SHOWN_AS_NOISE = ">no measurable difference<"


def judged(candidate, speedup: float, interval: list[float]) -> Evaluation:
    timing = {**VERDICT["timing"], "speedups": {"eager": speedup}, "speedup_intervals": {"eager": interval}}
    evaluation = Evaluation.objects.create(candidate=candidate, arch="h100", harness_version=HARNESS_VERSION)
    record_verdict(evaluation, {**VERDICT, "timing": timing})
    return evaluation


@pytest.fixture
def noisy():
    """CPU noise around the reference's own kernels: 1.22x, but the interval holds 1."""
    problem = make_problem(scale=2, origin="kernelbench", level=1, task=1)
    return judged(make_candidate(problem=problem, scale=3), 1.22, [0.95, 1.6])


def test_the_leaderboard_shows_noise_as_no_difference_and_counts_no_win(client, noisy):
    content = client.get("/leaderboard/h100/").content.decode()
    assert SHOWN_AS_NOISE in content and "1.22x<" not in content
    eager = next(s for s in board("h100").summary if s.level == "all" and s.baseline == "eager")
    assert (eager.verified, eager.beats) == (1, 0)
    assert f"#{noisy.candidate_id}" not in client.get("/leaderboard/h100/", {"wins": "1"}).content.decode()


def test_the_api_and_export_say_it_is_no_win(client, noisy):
    row = client.get("/api/leaderboard/h100/").json()["rows"][0]
    assert row["beats"]["eager"] is False and row["speedup_intervals"]["eager"] == [0.95, 1.6]
    assert '"beats": {"eager": false' in client.get("/api/leaderboard/h100/export.jsonl").content.decode()


def test_the_kernel_and_problem_pages_show_no_difference(client, noisy):
    for url in (noisy.candidate.get_absolute_url(), noisy.candidate.problem.get_absolute_url()):
        content = client.get(url).content.decode()
        assert SHOWN_AS_NOISE in content and ">1.22x<" not in content


def test_the_run_page_and_its_live_events_show_no_difference(client, noisy):
    run = OptimizationRun.objects.create(problem=noisy.candidate.problem, status="done")
    assert SHOWN_AS_NOISE in client.get(run.get_absolute_url()).content.decode()
    assert evaluation_event(noisy)["differences"]["eager"] == NOISE


def test_a_win_beyond_doubt_shows_its_number(client):
    problem = make_problem(scale=2, origin="kernelbench", level=1, task=1)
    judged(make_candidate(problem=problem, scale=3), 2.5, [2.4, 2.6])
    content = Client().get("/leaderboard/h100/").content.decode()
    assert ">2.50x<" in content and SHOWN_AS_NOISE not in content


def test_the_kernel_page_says_what_its_interval_covers(client):
    problem = make_problem(scale=2, origin="kernelbench", level=1, task=2)
    measured = judged(make_candidate(problem=problem, scale=3), 1.5, [1.3, 1.7])
    timing = {
        **measured.verdict["timing"],
        "between_process": {"spread": 0.031, "controls": 12, "device_control_off": True},
    }
    Evaluation.objects.filter(pk=measured.pk).update(verdict={**measured.verdict, "timing": timing})

    content = client.get(measured.candidate.get_absolute_url()).content.decode()

    assert "where a second verification in fresh processes reads" in content
    assert "spread between processes (0.031" in content and "from 12 A/A controls" in content
    assert "last A/A control read off 1.0" in content


def test_the_summary_says_once_which_baselines_were_not_measured_here(client, noisy):
    content = client.get("/leaderboard/h100/").content.decode()

    assert "Not measured on h100: compile, compile-ro, cudagraph" in content
    summary = content[
        content.index('<table class="summary">') : content.index("</table>", content.index('<table class="summary">'))
    ]
    assert "<td>eager</td>" in summary and "<td>compile</td>" not in summary
