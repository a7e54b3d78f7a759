"""Every answer an operation can give is in the schema, errors included (court/api/schema.py); a
path no route matches answers JSON under /api/, as every API answer is."""

import pytest
from drf_spectacular.generators import SchemaGenerator

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def operations():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {f"{method.upper()} {path}": operation for path, item in schema["paths"].items() for method, operation in item.items()}


def test_every_operation_documents_refused_credentials_and_throttling(operations):
    assert all({"401", "429"} <= set(operation["responses"]) for operation in operations.values())


def test_reads_of_one_thing_and_pages_document_404(operations):
    documented = {name for name, operation in operations.items() if "404" in operation["responses"]}
    assert {"GET /api/problems/{id}/", "GET /api/problems/", "GET /api/leaderboard/{arch}/export.jsonl"} <= documented
    assert "POST /api/token/" not in documented


def test_writes_document_validation_permission_and_rate_limit_errors(operations):
    writes = {name: operation for name, operation in operations.items() if name.startswith("POST")}
    assert all({"403", "503"} <= set(operation["responses"]) for operation in writes.values())
    assert "400" in writes["POST /api/candidates/"]["responses"]
    assert "400" not in writes["POST /api/candidates/{id}/reverify/"]["responses"]
    assert "409" in writes["POST /api/reports/{id}/triage/"]["responses"]


def test_a_create_documents_the_answer_for_a_repeat(operations):
    assert {"200", "201"} <= set(operations["POST /api/problems/"]["responses"])
    assert {"200", "201"} <= set(operations["POST /api/candidates/"]["responses"])


def test_an_unknown_api_route_answers_json(anonymous, client):
    response = anonymous.get("/api/nothing-here/")
    assert response.status_code == 404 and "/api/schema/" in response.json()["detail"]
    assert client.get("/nothing-here/")["Content-Type"].startswith("text/html")


def test_the_api_root_lists_every_resource_and_the_schema(anonymous):
    root = anonymous.get("/api/").json()
    assert {"problems", "candidates", "evaluations", "reports", "runs", "token", "schema", "docs"} <= set(root)
