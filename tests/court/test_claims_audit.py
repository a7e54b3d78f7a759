"""The audit of published kernels (/audit/cuda-l1/, and as JSON and CSV from the API): its summary is
what the release file says, re-derived here from the file itself; each row keeps the claim apart
from our measurement; every figure leads to the kernels that prove it."""

import csv
import io
import re
from collections import Counter

import pytest
from django.core.management import call_command

from court import check_meanings
from court.models import Candidate, Evaluation
from evaluation.harness import release
from evaluation.harness.checks import CHECKS as HARNESS_CHECKS
from evaluation.harness.static_analysis import KINDS

pytestmark = pytest.mark.django_db


def test_every_check_of_the_harness_has_a_meaning():
    assert [check.name for check in HARNESS_CHECKS if check.name not in check_meanings.CHECKS] == []


@pytest.fixture
def imported(cpu_release):
    call_command("import_problems", str(cpu_release.published))
    call_command("import_release", str(cpu_release.path))
    return release.read(cpu_release.path)


def from_the_file(measured: release.Release) -> dict:
    """The summary's figures computed from the release alone, by the audit's stated rules."""
    statuses = Counter(entry.status for entry in measured.entries)
    held = Counter()
    for entry in measured.entries:
        timing = entry.verdict.get("timing") or {}
        ours, claimed = (timing.get("speedups") or {}).get("eager"), entry.claims["scores"]["score_default"]
        if entry.status != "verified" or ours is None:
            continue
        low, high = timing["speedup_intervals"]["eager"]
        held["beats_claim" if low > claimed else "not_reproduced" if high < 0.8 * claimed else "reproduced"] += 1
    return {
        "entries": len(measured.entries),
        "measured": len(measured.entries),
        "verified": statuses["verified"],
        "rejected": statuses["rejected"],
        "rejected_by": [
            {"check": check, "family": check_meanings.family(check), "kernels": count}
            for check, count in Counter(e.failed_check for e in measured.entries if e.status == "rejected").most_common()
        ],
        "incorrect": statuses["incorrect"],
        "errors": statuses["error"] + statuses["timeout"] + statuses["crashed"],
        "not_measured": 0,
        "not_reproduced": held["not_reproduced"],
        "reproduced": held["reproduced"],
        "beats_claim": held["beats_claim"],
        # Of the test entries, four rewrite the problem in PyTorch and one is CUDA-L1's placeholder "None".
        "kinds": [
            {"kind": "rewrite", "meaning": KINDS["rewrite"], "entries": 4, "verified": statuses["verified"]},
            {"kind": "none", "meaning": KINDS["none"], "entries": 1, "verified": 0},
        ],
    }


def glance(content: str) -> dict[str, int]:
    """The page's figures at a glance, by the `?show=` each links to."""
    figures = re.findall(r'href="\?show=([^"#]+)#entries"[^>]*><strong>(\d+)</strong>', content)
    return {show: int(count) for show, count in figures}


def test_the_summary_is_what_the_release_file_says(client, imported):
    expected = from_the_file(imported)
    data = client.get("/api/audit/cuda-l1/cpu/").json()
    assert data["summary"] == expected
    assert expected["verified"] == 2 and expected["rejected_by"][0]["check"] == "output_is_plain_tensor"
    page = client.get("/audit/cuda-l1/cpu/").content.decode()
    figures = glance(page)
    assert figures["verified"] == expected["verified"]
    assert figures["rejected"] == expected["rejected"]
    assert figures["incorrect"] == expected["incorrect"]
    assert figures["errors"] == expected["errors"]
    assert figures["not%20measured"] == expected["not_measured"]
    assert figures["not%20reproduced"] == expected["not_reproduced"]
    assert figures["reproduced%20within%2020%25"] == expected["reproduced"]
    assert figures["beats%20the%20claim"] == expected["beats_claim"]
    assert "<code>output_is_plain_tensor</code> (lazy output): 1" in page


def test_each_row_keeps_the_claim_apart_from_our_measurement(client, imported):
    rows = {(row["level"], row["task"]): row for row in client.get("/api/audit/cuda-l1/cpu/").json()["rows"]}
    honest = rows[1, 1]
    assert honest["claim"] == {
        "by": "cuda-l1",
        "arch": "h100",
        "speedup_eager": 1.05,
        "speedup_compile": 0.84,
        "speedup_compile_ro": None,
        "speedup_cudagraph": None,
        "speedup_cudnn": None,
    }
    entry = next(e for e in imported.entries if (e.level, e.task) == (1, 1))
    measured = honest["measured"]
    assert measured["status"] == "verified" and measured["release"] == "cpu-test"
    assert measured["speedup_eager"] == entry.verdict["timing"]["speedups"]["eager"]
    assert measured["speedup_eager_interval"] == entry.verdict["timing"]["speedup_intervals"]["eager"]
    assert set(measured["measures"]) == {"steady_state", "latency"}  # no device time on the CPU
    lazy = rows[1, 2]["measured"]
    assert (lazy["deciding_check"], lazy["speedup_eager"]) == ("output_is_plain_tensor", None)

    table = list(csv.reader(io.StringIO(client.get("/api/audit/cuda-l1/cpu/audit.csv").content.decode())))
    header, first = table[0], dict(zip(table[0], table[1]))
    assert all(name.startswith(("claim_", "measured_")) for name in header[4:-1])
    assert (first["claim_speedup_eager"], first["measured_status"]) == ("1.05", "verified")
    assert float(first["measured_speedup_eager"]) == measured["speedup_eager"]


def test_the_audit_counts_entries_by_kind_and_lists_those_of_one_kind(client, imported):
    page = client.get("/audit/cuda-l1/cpu/").content.decode()
    placeholders = client.get("/audit/cuda-l1/cpu/", {"kind": "none"}).content.decode()
    rows = client.get("/api/audit/cuda-l1/cpu/", {"kind": "none"}).json()["rows"]

    assert "<code>rewrite</code>: 2 of 4</a>" in page and "<code>none</code>: 0 of 1</a>" in page
    assert "1 of 5 entries are <code>none</code>" in placeholders
    assert len(re.findall(r'href="/kernels/\d+/#verdict-\d+">#', placeholders)) == 1
    assert [(row["kind"], row["measured"]["deciding_check"]) for row in rows] == [("none", "defines_model_new")]


def test_the_page_labels_every_published_number_a_claim(client, imported):
    page = client.get("/audit/cuda-l1/cpu/").content.decode()
    assert "Claimed by cuda-l1" in page and "Measured here: steady state" in page
    assert '<span class="claim">claimed 17.80x</span> <small>on h100</small>' in page


def test_every_figure_leads_to_the_kernels_that_prove_it(client, imported):
    rejected = Evaluation.objects.get(status="rejected")
    page = client.get("/audit/cuda-l1/cpu/?show=rejected").content.decode()
    kernels = set(re.findall(r'href="/kernels/(\d+)/#verdict-(\d+)"', page))
    assert kernels == {(str(rejected.candidate_id), str(rejected.pk))}
    chart = client.get("/audit/cuda-l1/cpu/").context["chart"]
    verified = Evaluation.objects.filter(status="verified")
    assert sorted(point["url"] for point in chart["points"]) == sorted(
        f"/kernels/{e.candidate_id}/#verdict-{e.pk}" for e in verified
    )
    kernel_page = client.get(f"/kernels/{rejected.candidate_id}/").content.decode()
    assert f'id="verdict-{rejected.pk}"' in kernel_page
    assert "Imported from the release <strong>cpu-test</strong>, not run by a worker here" in kernel_page


def test_hidden_kernels_are_left_out_and_delisted_ones_stay(client, imported):
    Candidate.objects.filter(evaluations__status="incorrect").update(curation="hidden")
    Candidate.objects.filter(evaluations__status="rejected").update(curation="delisted", curation_reason="lazy tensor")
    summary = client.get("/api/audit/cuda-l1/cpu/").json()["summary"]
    assert (summary["entries"], summary["incorrect"], summary["rejected"]) == (4, 0, 1)
    assert 'title="lazy tensor" tabindex="0">delisted</span>' in client.get("/audit/cuda-l1/cpu/").content.decode()


def test_an_architecture_without_verdicts_has_no_audit(client, imported):
    assert client.get("/audit/cuda-l1/").url == "/audit/cuda-l1/cpu/"
    assert client.get("/audit/cuda-l1/h100/").status_code == 404
    response = client.get("/api/audit/cuda-l1/h100/")
    assert response.status_code == 404 and "audited there: cpu" in response.json()["detail"]
    assert client.get("/audit/nobody/").status_code == 404


def test_before_any_verdict_the_audit_says_how_one_comes(client, db):
    content = client.get("/audit/cuda-l1/").content.decode()
    assert "No verdict yet on any of cuda-l1" in content and "manage.py import_release" in content
