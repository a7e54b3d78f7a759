"""Throttling answers 429 with Retry-After, for every rate the API has; the OpenAPI schema is valid."""

import itertools

import pytest
from django.core.management import call_command

from court.models import Candidate, HackReport, OptimizationRun, Problem
from tests.api.conftest import client_for
from tests.court.factories import CANDIDATE_SOURCE, PROBLEM_SOURCE, make_candidate

pytestmark = pytest.mark.django_db

_scales = itertools.count(20)


def problem_body(kernel):
    return {"source": PROBLEM_SOURCE.format(scale=next(_scales))}


def candidate_body(kernel):
    return {"problem": kernel.problem_id, "code": CANDIDATE_SOURCE.format(scale=next(_scales))}


def report_body(kernel):
    return {"kernel": kernel.pk, "category": "caching", "text": f"stale output #{next(_scales)}"}


def run_body(kernel):
    return {"problem": kernel.problem_id}


WRITES = {
    # what is written: (the rate that limits it, url, a fresh valid body, the rows it adds)
    "problem": ("submissions", "/api/problems/", problem_body, Problem),
    "candidate": ("submissions", "/api/candidates/", candidate_body, Candidate),
    "report": ("reports", "/api/reports/", report_body, HackReport),
    "run": ("runs", "/api/runs/", run_body, OptimizationRun),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_writing_past_the_rate_answers_429_with_retry_after(user, rate, write, django_user_model):
    scope, url, body, model = WRITES[write]
    rate(scope)
    kernel = make_candidate(scale=2)
    codes = [user.post(url, body(kernel), format="json").status_code for _ in range(2)]
    rows = model.objects.count()
    response = user.post(url, body(kernel), format="json")
    assert codes == [201, 201] and response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert model.objects.count() == rows
    someone_else = client_for(django_user_model.objects.create_user("someone-else"))
    assert someone_else.post(url, body(kernel), format="json").status_code == 201


@pytest.mark.parametrize("who,scope", [("anonymous", "anon"), ("user", "user")])
def test_reading_past_the_rate_answers_429_with_retry_after(request, rate, who, scope):
    client = request.getfixturevalue(who)
    rate(scope, "3/min")
    codes = [client.get("/api/problems/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    assert int(client.get("/api/leaderboard/h100/export.jsonl")["Retry-After"]) > 0


def test_openapi_schema_validates(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    assert "/api/candidates/" in (tmp_path / "schema.yaml").read_text()


def test_docs_pages_answer(anonymous):
    assert anonymous.get("/api/docs/").status_code == 200
    assert anonymous.get("/api/schema/").status_code == 200
