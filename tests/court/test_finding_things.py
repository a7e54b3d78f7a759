"""The leaderboard and the problem list: search, filters that stay in the URL, pages of 50, and
featured kernels and problems shown as such."""

import re

import pytest
from django.utils import timezone

from court.models import Evaluation
from court.selectors import PAGE_SIZE
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import make_candidate, make_problem

pytestmark = pytest.mark.django_db

COUNT = PAGE_SIZE + 10


@pytest.fixture
def catalogue():
    """60 level-1 problems, one verified kernel each; task 7 is a convolution and featured."""
    kernels = []
    for task in range(1, COUNT + 1):
        title = "Conv2d then ReLU" if task == 7 else f"Scales by {task}"
        problem = make_problem(scale=task + 1, origin="kernelbench", level=1 if task <= 50 else 2, task=task, title=title)
        kernel = make_candidate(problem=problem, scale=task + 1, curation="featured" if task == 7 else None)
        Evaluation.objects.create(
            candidate=kernel,
            arch="h100",
            harness_version=HARNESS_VERSION,
            status="verified",
            speedup_eager=1 + task / 100,
            finished_at=timezone.now(),
            verdict={"timing": {"speedup_intervals": {"eager": [1 + task / 100 - 0.005, 1 + task / 100 + 0.005]}}},
        )
        kernels.append(kernel)
    problems = [kernel.problem for kernel in kernels]
    problems[6].visibility = "featured"
    problems[6].save()
    return kernels


def kernels_listed(content: bytes) -> list[int]:
    return [int(pk) for pk in re.findall(r'href="/kernels/(\d+)/"', content.decode())]


def test_the_leaderboard_shows_fifty_rows_a_page_and_links_the_next(client, catalogue):
    first = client.get("/leaderboard/h100/")
    assert kernels_listed(first.content) == [kernel.pk for kernel in catalogue[:PAGE_SIZE]]
    assert b'rel="next"' in first.content and f"{COUNT} kernels".encode() in first.content
    second = client.get("/leaderboard/h100/", {"page": 2})
    assert kernels_listed(second.content) == [kernel.pk for kernel in catalogue[PAGE_SIZE:]]


def test_leaderboard_search_finds_a_title_a_label_or_a_kernel(client, catalogue):
    assert kernels_listed(client.get("/leaderboard/h100/", {"q": "conv"}).content) == [catalogue[6].pk]
    assert kernels_listed(client.get("/leaderboard/h100/", {"q": "L2 T55"}).content) == [catalogue[54].pk]
    assert kernels_listed(client.get("/leaderboard/h100/", {"q": f"#{catalogue[3].pk}"}).content)[0] == catalogue[3].pk


def test_filters_stay_in_the_links_to_other_pages(client, catalogue):
    content = client.get("/leaderboard/h100/", {"sort": "eager", "wins": "1"}).content.decode()
    assert "?wins=1&amp;sort=eager&amp;page=2" in content
    assert kernels_listed(content.encode())[0] == catalogue[-1].pk  # the fastest first


def test_featured_kernels_are_shown_as_such_and_can_be_picked_alone(client, catalogue):
    content = client.get("/leaderboard/h100/").content.decode()
    featured = re.search(r'<tr class="featured">.*?href="/kernels/(\d+)/".*?★ featured', content, re.S)
    assert featured and int(featured.group(1)) == catalogue[6].pk
    assert kernels_listed(client.get("/leaderboard/h100/", {"featured": "1"}).content) == [catalogue[6].pk]


def problems_listed(response) -> int:
    return len(re.findall(r'href="/problems/\d+/"', response.content.decode()))


def test_the_problem_list_searches_filters_and_pages(client, catalogue):
    first = client.get("/problems/")
    assert f"{COUNT} problems".encode() in first.content and problems_listed(first) == PAGE_SIZE
    assert b"?page=2" in first.content
    assert problems_listed(client.get("/problems/", {"q": "conv"})) == 1
    found = client.get("/problems/", {"q": "L2 T55"})
    assert b"L2 T55" in found.content and problems_listed(found) == 1
    assert problems_listed(client.get("/problems/", {"level": 2})) == COUNT - 50
    featured = client.get("/problems/", {"featured": "1"})
    assert "★ featured" in featured.content.decode() and problems_listed(featured) == 1
