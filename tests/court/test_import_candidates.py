"""import_candidates brings in published kernels unverified, with their claims kept beside them."""

import gzip
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from court.models import Candidate, Claim, Evaluation, Problem

pytestmark = pytest.mark.django_db


def run_import(path, arch="h100", origin="cuda-l1") -> str:
    out = StringIO()
    call_command("import_candidates", str(path), "--arch", arch, "--origin", origin, stdout=out)
    return out.getvalue()


def release_rows(path):
    with gzip.open(path, "rt") as lines:
        return [json.loads(line) for line in lines]


def test_import_creates_a_candidate_per_entry_with_code_and_skips_null_and_none(h100_release):
    rows = release_rows(h100_release)
    with_code = [row for row in rows if row["custom_code"] not in (None, "None")]
    null = sum(1 for row in rows if row["custom_code"] is None)
    none_string = sum(1 for row in rows if row["custom_code"] == "None")
    assert null > 0 and none_string > 0
    out = run_import(h100_release)
    assert Candidate.objects.count() == len(with_code)
    assert f"{len(with_code)} candidates imported" in out
    assert f"{null + none_string} skipped (no candidate)" in out
    assert not Candidate.objects.filter(code="None").exists()


def test_imported_candidates_are_unverified_and_claims_are_not_measurements(h100_release):
    run_import(h100_release)
    assert Evaluation.objects.count() == 0
    candidate = Candidate.objects.get(problem__level=1, problem__task=9)
    claim = candidate.claims.get()
    assert (claim.source, claim.arch) == ("cuda-l1", "h100")
    assert claim.speedup_eager == pytest.approx(17.8, abs=0.1)
    assert candidate.origin == Candidate.Origin.IMPORT and candidate.origin_label == "cuda-l1"


def test_second_import_changes_nothing(h100_release):
    run_import(h100_release)
    counts = (Candidate.objects.count(), Claim.objects.count(), Problem.objects.count())
    out = run_import(h100_release)
    assert (Candidate.objects.count(), Claim.objects.count(), Problem.objects.count()) == counts
    assert "0 candidates imported" in out


def test_same_code_published_for_two_architectures_is_one_candidate_with_two_claims(tmp_path, h100_release):
    row = next(r for r in release_rows(h100_release) if r["custom_code"] not in (None, "None"))
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(row) + "\n")
    run_import(path, arch="h100")
    run_import(path, arch="a100")
    candidate = Candidate.objects.get()
    assert sorted(candidate.claims.values_list("arch", flat=True)) == ["a100", "h100"]


def test_languages_are_detected(h100_release):
    run_import(h100_release)
    languages = set(Candidate.objects.values_list("language", flat=True))
    assert {"cuda", "pytorch"} <= languages


def test_bad_arch_is_refused():
    with pytest.raises(CommandError, match="short lower-case key"):
        call_command("import_candidates", "x.jsonl", "--arch", "H 100", "--origin", "cuda-l1")
