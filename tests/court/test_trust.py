"""The trust report (court/trust.py): the families the issue names, each closed by a check or flag the
harness has and proved by named tests; the page and /api/trust/ show the suite's recorded results,
never typed ones."""

import json

import pytest
from django.urls import reverse

from court import check_meanings, flag_meanings, trust

pytestmark = pytest.mark.django_db

# The families the field has documented (issue 35), each a row of the report.
DOCUMENTED = [
    "Work left on another stream",
    "Background threads and processes",
    "Lazy or deferred outputs",
    "Patched timers or comparison",
    "Forged result channels",
    "Stale memory reused from the reference",
    "Mutated inputs",
    "Outputs cached by pointer, shape or call count",
    "Predicted seeds",
    "Constant outputs under a loose tolerance",
    "Shapes hard-coded to the test inputs",
    "Precision lowered (TF32, fp16)",
    "The library call wrapped unchanged",
    "A fast path that never runs",
    "Detecting warm-up or the checked call",
    "Persisting-L2 tricks",
    "Drifting after N correct calls",
    "Reading the expected answer from memory",
    "Replacing installed packages",
    "Physically impossible speedups",
    "Weak baselines inflating ratios",
]


def test_every_documented_family_has_a_row():
    assert [name for name in DOCUMENTED if name not in {family.name for family in trust.FAMILIES}] == []


def test_a_defended_family_names_harness_checks_and_tests_and_an_undefended_one_says_why():
    for family in trust.FAMILIES:
        assert all(name in check_meanings.CHECKS or name in flag_meanings.FLAGS for name in family.closed_by), family.name
        if family.defence == trust.OPEN:
            assert family.why and not family.since, family.name
        else:
            assert family.closed_by and family.tests and family.since, family.name
            assert all(test.startswith("tests/") and "::" in test for test in family.tests), family.name


def test_a_family_naming_what_the_harness_does_not_check_is_refused():
    with pytest.raises(KeyError, match="no_such_check"):
        trust.explanation("no_such_check")


@pytest.fixture
def results_file(tmp_path, settings):
    settings.TRUST_RESULTS = str(tmp_path / "trust-results.json")
    return tmp_path / "trust-results.json"


def test_the_page_shows_each_test_with_the_result_the_suite_recorded(client, results_file):
    passed, failed = trust.FAMILIES[0].tests[0], trust.FAMILIES[1].tests[0]
    results_file.write_text(
        json.dumps(
            {
                "written_at": "2026-11-28T05:00:00+00:00",
                "tests": {
                    passed: {"outcome": "passed", "at": "2026-11-28T05:00:00+00:00"},
                    failed: {"outcome": "failed", "at": "x"},
                },
            }
        )
    )

    page = client.get(reverse("kernels:trust")).content.decode()

    assert f'<code class="test-id">{passed}</code> <span class="outcome outcome-passed">passed' in page
    assert f'<code class="test-id">{failed}</code> <span class="outcome outcome-failed">failed' in page
    assert page.count("no result recorded yet") == sum(len(family.tests) for family in trust.FAMILIES) - 2
    assert "last on 2026-11-28T05:00:00+00:00" in page


def test_without_results_the_page_claims_none(client, results_file):
    page = client.get(reverse("kernels:trust")).content.decode()

    assert "outcome-passed" not in page
    assert page.count("no result recorded yet") == sum(len(family.tests) for family in trust.FAMILIES)


def test_each_check_a_row_names_links_to_its_explanation_on_the_page(client, results_file):
    page = client.get(reverse("kernels:trust")).content.decode()

    for family in trust.FAMILIES:
        for name in family.closed_by:
            kind, meaning = trust.explanation(name)
            assert f'href="#{kind}-{name}"' in page
            assert f'<dt id="{kind}-{name}">' in page
    assert "Native code in the candidate&#x27;s own process" in page and "Side channels" in page


def test_the_api_gives_the_same_report_as_json(client, results_file):
    test = trust.FAMILIES[2].tests[0]
    results_file.write_text(json.dumps({"written_at": "w", "tests": {test: {"outcome": "skipped", "at": "a"}}}))

    body = client.get("/api/trust/").json()

    assert [family["name"] for family in body["families"]] == [family.name for family in trust.FAMILIES]
    assert body["families"][2]["tests"][0] == {"id": test, "outcome": "skipped", "at": "a"}
    assert body["families"][0]["closed_by"][0] == {"name": "no_hidden_work", "kind": "check"}
    assert {item["name"] for item in body["out_of_scope"]} >= {"Native code in the candidate's own process"}
    assert body["results_written_at"] == "w"


def test_every_page_links_to_the_report_in_its_footer_and_every_verdict_too(client):
    from tests.court.factories import make_candidate, make_evaluation

    evaluation = make_evaluation(make_candidate())

    for path in ("/", reverse("kernels:problems"), evaluation.candidate.get_absolute_url()):
        page = client.get(path).content.decode()
        footer = page[page.index('<footer class="site">') :]
        assert f'href="{reverse("kernels:trust")}"' in footer, path
    verdict = page[page.index(f'id="verdict-{evaluation.pk}"') :]
    assert f'since which version: <a href="{reverse("kernels:trust")}">the trust report</a>' in verdict
