"""In a real browser, at desktop and phone widths: the leaderboard and the problem list are searched
and filtered with the filters kept in the URL, go page by page, mark featured kernels, read noise as
"no measurable difference", explain their flags, give level 3 its titles, and fit a 390 px phone."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from court.models import Evaluation
from court.selectors import PAGE_SIZE
from court.services import import_kernelbench_problem
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import PROBLEM_SOURCE, make_candidate
from tests.e2e.conftest import assert_fits_the_width, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

COUNT = PAGE_SIZE + 5
# KernelBench level 3 documents only its parameters: the title comes from its __init__'s docstring.
VGG = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, num_classes=1000):
        """
        Initialize the VGG16 model.

        :param num_classes: The number of output classes
        """
        super().__init__()
        self.classifier = nn.Linear(8, num_classes)

    def forward(self, x):
        return self.classifier(x)

def get_inputs():
    return [torch.randn(2, 8)]

def get_init_inputs():
    return []
'''


def verified(kernel, eager: float, interval: list[float], flags=()) -> Evaluation:
    return Evaluation.objects.create(
        candidate=kernel,
        arch="h100",
        harness_version=HARNESS_VERSION,
        status="verified",
        speedup_eager=eager,
        flags=list(flags),
        finished_at=timezone.now(),
        verdict={"timing": {"speedup_intervals": {"eager": interval}}},
    )


@pytest.fixture
def catalogue():
    """55 level-1 and level-2 problems with a kernel each, and VGG16 from level 3. Task 7's kernel is
    featured; task 9's is CPU noise around the reference's own kernels (1.22x, interval 0.95-1.6)."""
    kernels = {}
    for task in range(1, COUNT + 1):
        problem, _ = import_kernelbench_problem(
            level=1 if task <= 30 else 2, task=task, source=PROBLEM_SOURCE.format(scale=task + 1)
        )
        if task == 7:
            problem.title = "Conv2d then ReLU"
            problem.save()
        kernel = make_candidate(problem=problem, scale=task + 1, curation="featured" if task == 7 else None)
        if task == 9:
            verified(kernel, 1.22, [0.95, 1.6], flags=["same_kernels_as_reference"])
        else:
            verified(kernel, 1.5 + task / 10, [1.45 + task / 10, 1.55 + task / 10])
        kernels[task] = kernel
    vgg, _ = import_kernelbench_problem(level=3, task=11, source=VGG)
    kernels["vgg"] = make_candidate(problem=vgg, scale=99)
    verified(kernels["vgg"], 2.0, [1.9, 2.1])
    return kernels


def test_the_leaderboard_is_searched_filtered_and_paged_in_the_url(catalogue, page, court_server, viewport):
    page.goto(f"{court_server}/leaderboard/h100/")
    expect(page.get_by_text(f"{COUNT + 1} kernels; 1–{PAGE_SIZE} shown")).to_be_visible()
    featured = page.locator("tr.featured")
    expect(featured).to_have_count(1)
    expect(featured.get_by_text("★ featured")).to_be_visible()
    noisy = page.locator("tr", has=page.get_by_role("link", name=f"#{catalogue[9].pk}", exact=True))
    expect(noisy.locator(".speedup.same")).to_have_text("no measurable difference")
    expect(noisy.locator(".flag", has_text="same_kernels_as_reference")).to_have_attribute(
        "title",
        "The candidate launched exactly the kernels the reference does, and none of its own: it does the reference's "
        "work, so its speedup is stated as 1.0 by construction (what was measured is kept beside it) and is never a win.",
    )
    page.get_by_text("What the flags mean").click()
    expect(page.locator("dl.flag-meanings dt", has_text="same_kernels_as_reference")).to_be_visible()
    assert_fits_the_width(page)
    screenshot(page, "leaderboard-page-1")

    page.get_by_label("Sort").select_option("eager")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**/leaderboard/h100/?**sort=eager**")
    page.get_by_role("link", name="Next →").click()
    page.wait_for_url("**/leaderboard/h100/?sort=eager&page=2")
    expect(page.get_by_label("Sort")).to_have_value("eager")  # the filters stay with the page
    expect(page.locator("table.rows tbody tr")).to_have_count(COUNT + 1 - PAGE_SIZE)

    page.get_by_role("searchbox", name="Search").fill("L2")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**/leaderboard/h100/?q=L2&**sort=eager**")
    expect(page.get_by_text(f"{COUNT - 30} kernels match")).to_be_visible()
    expect(page.get_by_role("searchbox", name="Search")).to_have_value("L2")

    page.goto(f"{court_server}/leaderboard/h100/?wins=1&q=T9")
    expect(page.get_by_text("No kernel matches these filters.")).to_be_visible()  # noise is no win
    page.goto(f"{court_server}/leaderboard/h100/?featured=1")
    expect(page.locator("table.rows tbody tr")).to_have_count(1)
    assert_fits_the_width(page)


def test_the_problem_list_is_searched_paged_and_titled(catalogue, page, court_server, viewport):
    page.goto(f"{court_server}/problems/")
    expect(page.get_by_text(f"{COUNT + 1} problems; 1–{PAGE_SIZE} shown")).to_be_visible()
    assert_fits_the_width(page)
    screenshot(page, "problems-page-1")
    page.get_by_role("link", name="2", exact=True).click()
    page.wait_for_url("**/problems/?page=2")
    expect(page.get_by_role("row", name="L3 T11 VGG16 model")).to_be_visible()

    page.get_by_role("searchbox", name="Search").fill("vgg")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**/problems/?q=vgg**")
    expect(page.locator("table.problems tbody tr")).to_have_count(1)
    page.get_by_role("link", name="L3 T11").click()
    expect(page.get_by_role("heading", name="L3 T11: VGG16 model")).to_be_visible()
    assert_fits_the_width(page)
    screenshot(page, "problem-l3")


def test_a_kernel_page_explains_its_flags_and_its_noise(catalogue, page, court_server, viewport):
    page.goto(f"{court_server}/kernels/{catalogue[9].pk}/")
    expect(page.locator("dl.flag-meanings dd").first).to_contain_text("launched exactly the kernels the reference does")
    assert_fits_the_width(page)
    screenshot(page, "kernel-flags")
