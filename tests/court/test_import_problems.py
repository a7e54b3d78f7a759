"""import_problems loads the KernelBench catalogue from a CUDA-L1 release file, idempotently."""

import gzip
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from court.models import Problem

pytestmark = pytest.mark.django_db


def run_import(path) -> str:
    out = StringIO()
    call_command("import_problems", str(path), stdout=out, stderr=StringIO())
    return out.getvalue()


def test_import_creates_250_problems_100_100_50_per_level(h100_release):
    out = run_import(h100_release)
    assert Problem.objects.count() == 250
    counts = {level: Problem.objects.filter(level=level).count() for level in (1, 2, 3)}
    assert counts == {1: 100, 2: 100, 3: 50}
    assert "250 created" in out
    assert Problem.objects.filter(origin=Problem.Origin.KERNELBENCH).count() == 250


def test_second_import_changes_nothing(h100_release):
    run_import(h100_release)
    before = dict(Problem.objects.values_list("id", "normalized_hash"))
    out = run_import(h100_release)
    assert "0 created, 0 updated, 250 unchanged" in out
    assert dict(Problem.objects.values_list("id", "normalized_hash")) == before


def test_tasks_that_differ_only_in_docstrings_stay_two_problems(h100_release):
    run_import(h100_release)
    assert Problem.objects.get(level=2, task=33).normalized_hash != Problem.objects.get(level=2, task=39).normalized_hash


def write_release(path, rows):
    with gzip.open(path, "wt") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    return path


def test_a_pasted_copy_of_a_task_becomes_that_task(tmp_path, h100_release):
    from court.services import submit_problem

    with gzip.open(h100_release, "rt") as lines:
        first = json.loads(lines.readline())
    pasted, created = submit_problem(source=first["ref_code"])
    assert created
    run_import(write_release(tmp_path / "one.jsonl.gz", [first]))
    pasted.refresh_from_db()
    assert (pasted.origin, pasted.level, pasted.task) == ("kernelbench", 1, 1)
    assert Problem.objects.count() == 1


def test_a_changed_task_is_updated_in_place(tmp_path, h100_release):
    with gzip.open(h100_release, "rt") as lines:
        first = json.loads(lines.readline())
    run_import(write_release(tmp_path / "v1.jsonl.gz", [first]))
    changed = dict(first, ref_code=first["ref_code"].replace("N = 2048", "N = 4096"))
    out = run_import(write_release(tmp_path / "v2.jsonl.gz", [changed]))
    assert "1 updated" in out
    assert "N = 4096" in Problem.objects.get(level=1, task=1).source


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="does not exist"):
        run_import(tmp_path / "nope.jsonl")


def test_line_that_is_not_json_is_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"level_id": 1, "task_id": 1, "ref_code": "x"}\nnot json\n')
    with pytest.raises(CommandError, match=r"bad.jsonl:2 is not JSON"):
        run_import(path)


def test_invalid_problem_is_reported_and_fails_the_command(tmp_path):
    path = tmp_path / "invalid.jsonl"
    path.write_text(json.dumps({"level_id": 1, "task_id": 1, "ref_code": "import torch\n"}) + "\n")
    with pytest.raises(CommandError, match="1 problems were invalid"):
        run_import(path)
    assert Problem.objects.count() == 0
