"""A finished job keeps its verdict through a database that dropped its connection: the write is
tried again on a new connection instead of the job raising and measuring everything again."""

import psycopg
import pytest
from django.db import OperationalError, close_old_connections, connection

from court.models import Evaluation
from tests.conftest import unavailable
from tests.court.factories import make_candidate, make_evaluation
from verification import evaluations
from verification.jobs import store_through_outage

pytestmark = pytest.mark.django_db(transaction=True)

VERDICT = {
    "status": "verified",
    "reason": "all checks passed",
    "checks": [],
    "flags": [],
    "timing": {"headline": "steady_state", "speedups": {"eager": 1.5}},
}


def end_this_connection_from_the_server() -> None:
    """What a PostgreSQL restart does to a worker's open connection."""
    if connection.vendor != "postgresql":
        unavailable("PostgreSQL (this test ends a connection from the server's side)")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", (pid,))


def store_with_the_connection_ended_first(evaluation: Evaluation, **options) -> list[int]:
    """The verdict's write, its connection ended by the server just before its first try."""
    tries = []

    def write():
        tries.append(1)
        if len(tries) == 1:
            end_this_connection_from_the_server()
        evaluations.record_verdict(evaluation, VERDICT, worker="w1")

    store_through_outage(write, what="store a verdict", **options)
    return tries


def test_a_verdict_is_stored_after_the_server_ended_the_workers_connection():
    evaluation = make_evaluation(make_candidate(scale=2), status="running")

    tries = store_with_the_connection_ended_first(evaluation)

    stored = Evaluation.objects.get(pk=evaluation.pk)
    assert (stored.status, stored.worker, stored.speedup_eager) == ("verified", "w1", 1.5)
    assert len(tries) == 2


def test_a_database_away_for_longer_than_the_window_raises_so_the_broker_retries_the_job():
    evaluation = make_evaluation(make_candidate(scale=2), status="running")

    with pytest.raises(OperationalError):
        store_with_the_connection_ended_first(evaluation, within_s=0)

    close_old_connections()  # as the job's next try does
    assert Evaluation.objects.get(pk=evaluation.pk).status == "running"
