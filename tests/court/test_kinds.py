"""The kind of optimization a kernel is (rewrite in PyTorch, raw CUDA, Triton, CUDA graph,
torch.compile, flags only, the problem's code unchanged), read from its code when it is created, on
the leaderboard as a column and a filter, and in the API."""

import re

import pytest

from tests.court.factories import CANDIDATE_SOURCE, make_candidate, make_evaluation, make_problem

pytestmark = pytest.mark.django_db

CUDA = "from torch.utils.cpp_extension import load_inline\n" + CANDIDATE_SOURCE


def test_a_candidate_s_kind_is_read_from_its_code_and_its_problem_s():
    problem = make_problem(scale=3)

    unchanged = make_candidate(problem=problem, scale=3)
    rewrite = make_candidate(problem=problem, code=CANDIDATE_SOURCE.format(scale=3).replace("x * 3", "x + x + x"))
    cuda = make_candidate(problem=problem, code=CUDA.format(scale=3))

    assert (unchanged.kind, rewrite.kind, cuda.kind) == ("unchanged", "rewrite", "cuda")


def test_the_leaderboard_shows_each_kernel_s_kind_and_filters_by_it(client):
    first = make_problem(scale=2, origin="kernelbench", level=1, task=1)
    second = make_problem(scale=3, origin="kernelbench", level=1, task=2)
    cuda = make_candidate(problem=first, code=CUDA.format(scale=2))
    unchanged = make_candidate(problem=second, scale=3)
    make_evaluation(cuda, arch="h100", speedup_eager=2.0)
    make_evaluation(unchanged, arch="h100", speedup_eager=2.0)

    page = client.get("/leaderboard/h100/").content.decode()
    filtered = client.get("/leaderboard/h100/", {"kind": "cuda"}).content.decode()
    rows = client.get("/api/leaderboard/h100/").json()["rows"]

    assert '<th scope="col" class="wide">Kind</th>' in page
    assert re.search(r"<td[^>]*>cuda</td>", page) and re.search(r"<td[^>]*>unchanged</td>", page)
    assert '<option value="cuda">cuda</option>' in page
    assert re.findall(r'href="/kernels/(\d+)/"', filtered) == [str(cuda.pk)]
    assert {row["kernel"]: row["kind"] for row in rows} == {cuda.pk: "cuda", unchanged.pk: "unchanged"}
    assert client.get("/api/candidates/", {"kind": "cuda"}).json()["results"][0]["id"] == cuda.pk
