"""Architectures side by side (issue 19): a problem page shows its best kernel on each GPU, and the
leaderboard compares two GPUs problem by problem."""

import pytest
from django.urls import reverse

from court.leaderboard import compare
from tests.court.factories import make_candidate, make_evaluation, make_problem

pytestmark = pytest.mark.django_db

_scales = iter(range(500, 10_000))


def kernel(problem, **fields):
    return make_candidate(problem=problem, scale=next(_scales), **fields)


def verdict(candidate, arch, eager, ms, interval=None):
    timing = {"speedup_intervals": {"eager": interval or [eager * 0.99, eager * 1.01]}}
    return make_evaluation(candidate, arch=arch, speedup_eager=eager, candidate_ms=ms, verdict={"timing": timing})


@pytest.fixture
def two_gpus():
    """L1 T1 verified on both (a different best on each), L1 T2 on h100 only, L2 T1 the same kernel
    best on both; a hidden kernel faster than all of them on h200."""
    t1, t2, l2 = (
        make_problem(scale=s, origin="kernelbench", level=lv, task=tk) for s, lv, tk in ((2, 1, 1), (3, 1, 2), (4, 2, 1))
    )
    on_h100, on_h200, only_h100, shared = kernel(t1), kernel(t1), kernel(t2), kernel(l2)
    verdict(on_h100, "h100", 2.0, 0.10)
    verdict(on_h100, "h200", 1.5, 0.09)
    verdict(on_h200, "h200", 3.0, 0.05)
    verdict(only_h100, "h100", 1.2, 1.0)
    verdict(shared, "h100", 4.0, 0.40)
    verdict(shared, "h200", 5.0, 0.20)
    verdict(kernel(l2, curation="hidden"), "h200", 50.0, 0.01)
    return {"t1": t1, "t2": t2, "l2": l2, "on_h100": on_h100, "on_h200": on_h200, "only_h100": only_h100, "shared": shared}


def test_the_comparison_pairs_each_problems_best_kernels_and_says_what_they_say_together(two_gpus):
    comparison = compare("h100", "h200")
    rows = [(row.problem.label, row.first and row.first.kernel, row.second and row.second.kernel) for row in comparison.rows]
    assert rows == [
        ("L1 T1", two_gpus["on_h100"].pk, two_gpus["on_h200"].pk),
        ("L1 T2", two_gpus["only_h100"].pk, None),
        ("L2 T1", two_gpus["shared"].pk, two_gpus["shared"].pk),
    ]
    assert (len(comparison.on_both), comparison.only_first, comparison.only_second, comparison.same_kernel) == (2, 1, 0, 1)
    assert comparison.median_speedup_first == pytest.approx(3.0)  # 2.0 and 4.0, the problems on both
    assert comparison.median_speedup_second == pytest.approx(4.0)  # 3.0 and 5.0: the hidden 50x is not there
    assert [row.time_ratio for row in comparison.rows] == [pytest.approx(0.5), None, pytest.approx(0.5)]


def test_the_comparison_page_shows_both_sides_and_keeps_its_filters(client, two_gpus):
    url = reverse("kernels:leaderboard_compare", args=["h100", "h200"])
    page = " ".join(client.get(url).content.decode().split())
    assert "2 problems have a verified kernel on both; 1 only on h100, 0 only on h200" in page
    assert "The same kernel is the best on both for 1." in page
    assert "median speedup over eager is 3.00x on h100 and 4.00x on h200" in page
    assert "takes a median 0.50 of the time of its best on h100" in page
    for name in ("on_h100", "on_h200", "only_h100", "shared"):
        assert reverse("kernels:candidate", args=[two_gpus[name].pk]) in page
    assert "none verified" in page and "0.100 ms" in page and "0.0500 ms" in page
    both_only = client.get(url, {"both": "1"}).content.decode()
    assert "L1 T1" in both_only and "L1 T2" not in both_only and 'name="both" value="1" checked' in both_only
    assert "L1 T2" in client.get(url, {"q": "t2"}).content.decode()


def test_a_gpu_nobody_evaluated_on_has_no_comparison_and_a_gpu_against_itself_is_its_board(client, two_gpus):
    assert client.get(reverse("kernels:leaderboard_compare", args=["h100", "b200"])).status_code == 404
    same = client.get(reverse("kernels:leaderboard_compare", args=["h200", "h200"]))
    assert same.status_code == 302 and same["Location"] == reverse("kernels:leaderboard", args=["h200"])


def test_the_leaderboard_links_to_the_comparison_with_each_other_gpu(client, two_gpus):
    page = client.get(reverse("kernels:leaderboard", args=["h100"])).content.decode()
    assert reverse("kernels:leaderboard_compare", args=["h100", "h200"]) in page


def test_a_problem_page_shows_its_best_listed_kernel_on_each_gpu(client, two_gpus):
    page = client.get(reverse("kernels:problem", args=[two_gpus["l2"].pk])).content.decode()
    section = page[page.index("Best kernel per architecture") : page.index("<h2>Reference</h2>")]
    assert section.index(">h100<") < section.index(">h200<")
    assert section.count(f"#{two_gpus['shared'].pk}<") == 2 and "5.00x" in section and "0.200 ms" in section
    t1 = client.get(reverse("kernels:problem", args=[two_gpus["t1"].pk])).content.decode()
    assert f"#{two_gpus['on_h200'].pk}<" in t1 and "3.00x" in t1
    unverified = make_problem(scale=77, origin="kernelbench", level=3, task=9)
    assert "Best kernel per architecture" not in client.get(reverse("kernels:problem", args=[unverified.pk])).content.decode()
