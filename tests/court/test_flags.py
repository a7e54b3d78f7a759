"""Every flag explains itself where it is shown, from one table (court.flag_meanings)."""

import pytest

from court.flag_meanings import FLAGS, describe
from evaluation.harness.flags import FLAGS as HARNESS_FLAGS
from tests.court.factories import make_candidate, make_problem
from tests.court.test_kernel_page import VERDICT
from tests.court.test_speedups_shown import judged

pytestmark = pytest.mark.django_db


def test_every_flag_the_harness_raises_has_a_meaning():
    assert [name for name, _ in HARNESS_FLAGS if name not in FLAGS] == []


@pytest.fixture
def flagged():
    problem = make_problem(scale=2, origin="kernelbench", level=1, task=1, degenerate=True)
    evaluation = judged(make_candidate(problem=problem, scale=3), 1.22, [0.95, 1.6])
    evaluation.flags = ["same_kernels_as_reference"]
    evaluation.verdict = {
        **VERDICT,
        "flags": ["same_kernels_as_reference"],
        "flag_details": {"same_kernels_as_reference": "the candidate launched exactly the reference's kernels"},
    }
    evaluation.save()
    return evaluation


def test_the_leaderboard_explains_each_flag_it_shows(client, flagged):
    content = client.get("/leaderboard/h100/").content.decode()
    meaning = describe("same_kernels_as_reference")
    assert f'title="{meaning}"' in content.replace("&#x27;", "'")
    assert "What the flags mean" in content and describe("degenerate") in content.replace("&#x27;", "'")


def test_the_kernel_page_gives_the_meaning_and_what_this_verdict_found(client, flagged):
    content = client.get(flagged.candidate.get_absolute_url()).content.decode().replace("&#x27;", "'")
    assert describe("same_kernels_as_reference") in content
    assert "the candidate launched exactly the reference's kernels" in content
