"""The pages answer, list the catalogue, and take a pasted module."""

import pytest
from django.urls import reverse

from court.models import OptimizationRun, Problem
from tests.court.factories import PROBLEM_SOURCE, make_candidate, make_problem

pytestmark = pytest.mark.django_db


def test_home_page_answers(client):
    response = client.get("/")
    assert response.status_code == 200
    assert b"Kernel Court" in response.content


def test_admin_login_answers(client):
    assert client.get("/admin/login/").status_code == 200


def test_problem_list_shows_every_problem_and_filters_by_level(client):
    make_problem(scale=2, origin="kernelbench", level=1, task=1)
    make_problem(scale=3, origin="kernelbench", level=2, task=1)
    response = client.get(reverse("kernels:problems"))
    assert b"2 problems." in response.content
    response = client.get(reverse("kernels:problems"), {"level": 2})
    assert b"1 problem." in response.content and b"L2 T1" in response.content


def test_hidden_problem_is_not_listed(client):
    make_problem(scale=2, visibility="hidden")
    assert b"0 problems" in client.get(reverse("kernels:problems")).content


def _paste(client, source):
    return client.post("/", {"source": source, "backend": "builtin", "max_rounds": 1}, follow=True)


def test_pasting_a_valid_module_creates_the_problem_and_starts_a_run(client):
    response = _paste(client, PROBLEM_SOURCE.format(scale=7))
    problem = Problem.objects.get()
    run = OptimizationRun.objects.get()
    assert run.problem == problem and run.backend == "builtin" and run.max_rounds == 1
    assert response.redirect_chain[-1][0] == run.get_absolute_url()
    assert b"Scales by 7." in response.content


def test_pasting_the_same_module_twice_is_one_problem_with_a_run_each(client):
    _paste(client, PROBLEM_SOURCE.format(scale=7))
    _paste(client, "# again\n" + PROBLEM_SOURCE.format(scale=7))
    assert Problem.objects.count() == 1
    first, second = OptimizationRun.objects.order_by("pk")
    assert first.link_key != second.link_key


def test_pasting_a_listed_problems_module_says_which_it_is(client):
    make_problem(scale=7, origin="kernelbench", level=1, task=3)
    response = _paste(client, "# again\n" + PROBLEM_SOURCE.format(scale=7))
    assert Problem.objects.count() == 1
    assert b"This module is L1 T3" in response.content


def test_pasting_an_invalid_module_shows_what_to_fix(client):
    response = client.post("/", {"source": "import torch\n"})
    assert response.status_code == 200
    assert b"No class <code>Model</code>" in response.content
    assert Problem.objects.count() == 0


def test_user_code_is_escaped(client):
    candidate = make_candidate()
    candidate.code = candidate.code + "\n# </code></pre><script>alert(1)</script>\n"
    candidate.save()
    content = client.get(candidate.get_absolute_url()).content
    assert b"<script>alert(1)</script>" not in content
    assert b"&lt;script&gt;" in content


def test_hidden_kernel_is_not_shown_to_visitors(client):
    candidate = make_candidate(curation="hidden")
    assert client.get(candidate.get_absolute_url()).status_code == 404
