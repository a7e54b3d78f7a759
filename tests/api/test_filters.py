"""The list filters take what the schema says they take: an id that names nothing finds nothing, and
a malformed value is a 400 that names the parameter (issue 17, item 12: `?problem=0` answered 400)."""

import pytest

from tests.court.factories import make_candidate, make_evaluation

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "query",
    ["/api/candidates/?problem=0", "/api/evaluations/?candidate=0", "/api/runs/?problem=0", "/api/reports/?candidate=0"],
)
def test_an_id_that_names_nothing_finds_nothing(user, query):
    response = user.get(query)
    assert response.status_code == 200 and response.json()["results"] == []


def test_an_id_filter_finds_its_rows(anonymous):
    kernel = make_candidate(scale=2)
    make_candidate(scale=3)
    make_evaluation(kernel)
    assert [c["id"] for c in anonymous.get(f"/api/candidates/?problem={kernel.problem_id}").json()["results"]] == [kernel.pk]
    assert [e["candidate"] for e in anonymous.get(f"/api/evaluations/?candidate={kernel.pk}").json()["results"]] == [kernel.pk]


@pytest.mark.parametrize(
    "query,parameter",
    [
        ("/api/candidates/?problem=one", "problem"),
        ("/api/problems/?level=1.5", "level"),
        ("/api/problems/?degenerate=maybe", "degenerate"),
        ("/api/evaluations/?status=great", "status"),
    ],
)
def test_a_malformed_filter_is_a_400_naming_it(anonymous, query, parameter):
    response = anonymous.get(query)
    assert response.status_code == 400 and parameter in response.json()


def test_a_boolean_filter_filters(anonymous):
    kernel = make_candidate(scale=2)
    kernel.problem.degenerate = True
    kernel.problem.save()
    make_candidate(scale=3)
    assert [p["id"] for p in anonymous.get("/api/problems/?degenerate=true").json()["results"]] == [kernel.problem_id]
    assert kernel.problem_id not in [p["id"] for p in anonymous.get("/api/problems/?degenerate=false").json()["results"]]


def test_a_page_past_the_last_says_so(anonymous):
    response = anonymous.get("/api/problems/?page=9")
    assert response.status_code == 404 and "numbered from 1" in response.json()["detail"]
