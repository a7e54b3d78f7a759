"""Schemathesis against the running server, as a visitor, a user and staff, with every check it has:
no 5xx; every status, content type, header and body as the schema documents it; requests the
schema allows accepted, and requests it forbids refused.

The server is the browser tests' (daphne on the test database), started without its embedded
workers so that the generated candidates and runs are stored but not evaluated, and with rates
high enough that writes are exercised rather than throttled. Path and body ids are drawn in part
from objects that exist, so detail pages, curation and triage are reached, not only 404s.
"""

import json
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.authtoken.models import Token

from court.models import AuditEntry, Candidate, Evaluation, HackReport, OptimizationRun, Problem
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import CANDIDATE_SOURCE, PROBLEM_SOURCE, make_candidate
from tests.e2e.conftest import _court_servers, court_server, static_root  # noqa: F401  (the real server, reused)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

CHECKS = "all"
# Examples per operation, for each of the three callers (PHASES: the coverage phase's requests,
# staff's only, are most of a caller's, and fewer examples hardly shorten them).
MAX_EXAMPLES = 15
# Bodies whose validity the schema cannot say in full: a module is any string to it, but only Python
# defining the right class is accepted; an id must name something that exists (and is public); the
# token needs the right password. A schema-valid body may be refused with 400 there, and only there.
BODIES_CHECKED_BEYOND_THE_SCHEMA = [
    "POST /api/problems/",
    "POST /api/candidates/",
    "POST /api/reports/",
    "POST /api/reports/{id}/triage/",
    "POST /api/runs/",
    "POST /api/token/",
]
SEED = 20_241


@pytest.fixture
def api_server(request, monkeypatch):
    monkeypatch.setenv("COURT_EMBEDDED_WORKER", "false")
    # High enough for the ~1,150 requests of a caller, and no higher: a scoped rate is kept as one cache
    # key per request it allows (court.rate_limits.Slots), read on every request, and 100,000 a minute
    # made each write read 100,000 keys (the user's and staff's runs passed pytest's 600 s limit).
    for scope in ("ANON", "USER", "RUNS", "SUBMISSIONS", "REPORTS", "LOGIN", "LOGIN_ACCOUNT"):
        monkeypatch.setenv(f"COURT_THROTTLE_{scope}", "3000/min")
    return request.getfixturevalue("court_server")


@pytest.fixture
def known_objects():
    """Two kernels verified on cpu, a report against one, and a run: ids worth generating."""
    owner = get_user_model().objects.create_user("owner", "owner@example.org", "pw-owner-123")
    kernels = [make_candidate(scale=scale) for scale in (2, 3)]
    evaluations = [
        Evaluation.objects.create(
            candidate=kernel,
            arch="cpu",
            harness_version=HARNESS_VERSION,
            status="verified",
            speedup_eager=1.5,
            finished_at=timezone.now(),
        )
        for kernel in kernels
    ]
    report = HackReport.objects.create(candidate=kernels[0], reporter=owner, category="caching", text="stale output")
    run = OptimizationRun.objects.create(problem=kernels[0].problem, requester=owner)
    ids = {k.pk for k in kernels} | {k.problem_id for k in kernels} | {e.pk for e in evaluations} | {report.pk, run.pk}
    return {
        "id": sorted(ids),
        "problem": [k.problem_id for k in kernels],
        "kernel": [k.pk for k in kernels],
        "report": [report.pk],
        "arch": ["cpu"],
        "source": [PROBLEM_SOURCE.format(scale=scale) for scale in (5, 7)],
        "code": [CANDIDATE_SOURCE.format(scale=scale) for scale in (2, 5)],
        "proof": ["import torch\ndef get_inputs():\n    return [torch.ones(8)]\n"],
    }


def token_for(username: str, **fields) -> str:
    user = get_user_model().objects.create_user(username, f"{username}@example.org", f"pw-{username}-123", **fields)
    return Token.objects.create(user=user).key


def config_file(path, known: dict) -> str:
    """Bind path and body parameters to known values half of the time."""
    lines = ["[dictionaries]"]
    lines += [f"{name} = {{ values = {json.dumps(values)} }}" for name, values in known.items()]
    lines += ["", "[parameters]"]
    bindings = {
        "path.id": "id",
        "path.arch": "arch",
        "query.problem": "problem",
        "query.candidate": "kernel",
        "body.problem": "problem",
        "body.kernel": "kernel",
        "body.duplicate_of": "report",
        "body.source": "source",
        "body.code": "code",
        "body.proof_code": "proof",
    }
    lines += [f'"{key}" = {{ dictionary = "{name}", probability = 0.5 }}' for key, name in bindings.items()]
    lines += ["", "[[operations]]", f"include-name = {json.dumps(BODIES_CHECKED_BEYOND_THE_SCHEMA)}"]
    accepted = ["2xx", "3xx", "400", "401", "403", "404", "409", "429"]
    lines += [f"checks.positive_data_acceptance.expected-statuses = {json.dumps(accepted)}"]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


# The coverage phase (boundary and negative values of every parameter, most of a caller's ~1,150
# requests) runs for staff, who reach every operation a user does and more; the visitor's and the
# user's runs keep the examples and the fuzzing, which still reach every operation as each of them.
PHASES = {"visitor": "examples,fuzzing", "user": "examples,fuzzing", "staff": "examples,coverage,fuzzing"}


def schemathesis(base_url: str, token: str | None, config: str, workdir, phases: str) -> subprocess.CompletedProcess:
    credentials = ["--header", f"Authorization: Token {token}"] if token else []
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "schemathesis.cli",
            "--config-file",
            config,
            "run",
            f"{base_url}/api/schema/",
            "--url",
            base_url,
            "--checks",
            CHECKS,
            # Among them a response-time limit (10 s by default): a loaded 2-core CI runner took
            # 10.2 s once to refuse a log-in; a minute still catches a request that hangs.
            "--max-response-time",
            "60",
            "--mode",
            "all",
            "--max-examples",
            str(MAX_EXAMPLES),
            "--seed",
            str(SEED),
            "--workers",
            "1",
            "--phases",
            phases,
            *credentials,
            "--request-timeout",
            "30",
            "--generation-database",
            "none",
            "--no-color",
            "--report",
            "junit",
            "--report-junit-path",
            str(workdir / "junit.xml"),
        ],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
    )


def rows() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in (Problem, Candidate, HackReport, OptimizationRun, AuditEntry)}


@pytest.mark.parametrize("who", ["visitor", "user", "staff"])
def test_the_api_answers_every_generated_request_within_its_schema(api_server, known_objects, tmp_path, who):
    token = None if who == "visitor" else token_for(f"fuzz-{who}", is_staff=who == "staff")
    config = config_file(tmp_path / "schemathesis.toml", known_objects)
    before = rows()
    result = schemathesis(api_server, token, config, tmp_path, PHASES[who])
    assert result.returncode == 0, result.stdout[-12_000:] + result.stderr[-3_000:]
    if who == "visitor":
        # Every write was refused: a visitor's requests changed nothing.
        assert rows() == before
        return
    # The generated writes got through too, not only their validation errors.
    fuzzer = get_user_model().objects.get(username=f"fuzz-{who}")
    assert Problem.objects.filter(submitted_by=fuzzer).exists()
    assert HackReport.objects.filter(reporter=fuzzer).exists()
    if who == "staff":
        assert AuditEntry.objects.filter(actor=fuzzer).exists()
