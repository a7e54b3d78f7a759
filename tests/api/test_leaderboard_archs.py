"""A leaderboard exists for an architecture some worker has evaluated on; any other name is a 404 on
every route that takes one (page, API, export; the socket: tests/config/test_websockets.py), where the
export answered 200 with a row of nulls per problem (issue 18)."""

import pytest

from tests.court.factories import make_candidate, make_evaluation

pytestmark = pytest.mark.django_db

ROUTES = ["/leaderboard/{arch}/", "/api/leaderboard/{arch}/", "/api/leaderboard/{arch}/export.jsonl"]


@pytest.fixture
def evaluated_on_cpu():
    make_evaluation(make_candidate(scale=2), arch="cpu", speedup_eager=1.5)


@pytest.mark.parametrize("route", ROUTES)
def test_an_unknown_architecture_is_a_404(anonymous, evaluated_on_cpu, route):
    response = anonymous.get(route.format(arch="h100"))
    assert response.status_code == 404


def test_the_api_says_which_architectures_have_a_board(anonymous, evaluated_on_cpu):
    detail = anonymous.get("/api/leaderboard/h100/export.jsonl").json()["detail"]
    assert "'h100'" in detail and detail.endswith("with a leaderboard: cpu.")


@pytest.mark.parametrize("route", ROUTES)
def test_an_architecture_evaluated_on_has_its_board(anonymous, evaluated_on_cpu, route):
    assert anonymous.get(route.format(arch="cpu")).status_code == 200
