"""With the cache (Redis) unreachable, rate limits cannot be counted: reads go on, writes answer 503."""

import socket

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from court.models import Candidate, OptimizationRun
from court.rate_limits import UNAVAILABLE
from tests.court.factories import CANDIDATE_SOURCE, PROBLEM_SOURCE, make_candidate, make_evaluation

pytestmark = pytest.mark.django_db


@pytest.fixture
def cache_unreachable(settings):
    """A Redis cache on a port nothing listens on: each command really fails to connect."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }


@pytest.fixture
def kernel():
    kernel = make_candidate(scale=2)
    make_evaluation(kernel, arch="cpu", speedup_eager=1.5)
    return kernel


@pytest.mark.parametrize(
    "path", ["/api/problems/", "/api/candidates/", "/api/evaluations/", "/api/leaderboard/cpu/", "/api/runs/"]
)
def test_api_reads_keep_working(cache_unreachable, kernel, anonymous, user, path):
    assert anonymous.get(path).status_code == 200
    assert user.get(path).status_code == 200


def test_api_writes_answer_503_with_a_message(cache_unreachable, kernel, user):
    response = user.post(
        "/api/candidates/", {"problem": kernel.problem_id, "code": CANDIDATE_SOURCE.format(scale=5)}, format="json"
    )
    assert response.status_code == 503 and response.json()["detail"] == UNAVAILABLE
    assert user.post("/api/runs/", {"problem": kernel.problem_id}, format="json").status_code == 503
    assert Candidate.objects.count() == 1 and not OptimizationRun.objects.exists()


def test_api_token_answers_503(cache_unreachable, anonymous):
    get_user_model().objects.create_user("ada", password="kernel-court-pw-9")
    response = anonymous.post("/api/token/", {"username": "ada", "password": "kernel-court-pw-9"})
    assert response.status_code == 503


def test_pages_read_and_refuse_new_runs_with_a_message(cache_unreachable, kernel):
    client = Client()
    assert client.get("/").status_code == 200
    assert client.get(f"/kernels/{kernel.pk}/").status_code == 200
    response = client.post("/", {"source": PROBLEM_SOURCE.format(scale=7), "backend": "builtin", "max_rounds": 1})
    assert response.status_code == 503 and b"Rate limits cannot be checked right now" in response.content
    assert not OptimizationRun.objects.exists()


def test_the_leaderboard_its_api_and_export_read_without_the_cache(cache_unreachable, kernel):
    """What the leaderboard keeps between changes is in the database: the cache is not asked."""
    client = Client()
    for path in ("/leaderboard/cpu/", "/api/leaderboard/cpu/", "/api/leaderboard/cpu/export.jsonl"):
        assert client.get(path).status_code == 200
