"""While the database is unreachable, pages and the API answer a styled 503 that says to retry."""

import pytest
from django.db import OperationalError, connection
from django.test import Client
from django.utils.html import escape

from court.outage import UNREACHABLE, server_error_or_outage

pytestmark = pytest.mark.django_db


@pytest.fixture
def database_away():
    """Every query fails as psycopg's do while PostgreSQL is down."""

    def refuse(execute, sql, params, many, context):
        raise OperationalError("connection to server at 127.0.0.1, port 5432 failed: Connection refused")

    with connection.execute_wrapper(refuse):
        yield


def test_a_page_says_to_try_again(database_away):
    response = Client(raise_request_exception=False).get("/")

    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    page = response.content.decode()
    assert "Please try again in a minute" in page and escape(UNREACHABLE) in page
    assert "css/site.css" in page  # styled as the site is


def test_the_api_says_to_try_again(database_away):
    response = Client(raise_request_exception=False).get("/api/problems/")

    assert response.status_code == 503
    assert response.json() == {"detail": UNREACHABLE}


def test_another_error_stays_a_500(rf):
    try:
        raise ValueError("a bug of ours")
    except ValueError:
        response = server_error_or_outage(rf.get("/problems/"))

    assert response.status_code == 500
