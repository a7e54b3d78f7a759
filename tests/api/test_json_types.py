"""A JSON body's fields are of the types the schema gives them: DRF would have taken 0 as "0" and
"5" as 5, and answered as if the client had sent what it meant."""

import pytest

from court.models import HackReport
from tests.court.factories import make_candidate

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "body,field",
    [
        ({"category": "caching", "text": 7}, "text"),
        ({"category": 0, "text": "it caches"}, "category"),
        ({"category": "caching", "text": "it caches", "kernel": "KERNEL"}, "kernel"),
        ({"category": "caching", "text": "it caches", "kernel": True}, "kernel"),
    ],
)
def test_a_json_field_of_the_wrong_type_is_refused(user, body, field):
    kernel = make_candidate()
    body = {"kernel": kernel.pk, **body}
    if body["kernel"] == "KERNEL":
        body["kernel"] = str(kernel.pk)
    response = user.post("/api/reports/", body, format="json")
    assert response.status_code == 400 and list(response.json()) == [field]
    assert not HackReport.objects.exists()


def test_a_run_takes_only_numbers_as_numbers(user):
    kernel = make_candidate()
    response = user.post("/api/runs/", {"problem": kernel.problem_id, "max_rounds": "2"}, format="json")
    assert response.status_code == 400 and "max_rounds" in response.json()


def test_form_data_is_read_as_before(user):
    kernel = make_candidate()
    response = user.post("/api/reports/", {"kernel": str(kernel.pk), "category": "caching", "text": "it caches"})
    assert response.status_code == 201
