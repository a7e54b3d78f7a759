"""Importing a measured release (manage.py import_release): each verdict the harness gave on the
release's machine becomes an evaluation of its architecture, marked with the release, its candidate
made by create_candidate with the publisher's claims beside it; twice changes nothing; an older
harness's release counts nowhere; a live verdict supersedes an imported one."""

import pytest
from django.core.management import CommandError, call_command

from court.curation import request_reverification
from court.leaderboard import best_per_problem
from court.models import Candidate, Claim, Evaluation, Problem, Release
from evaluation.harness import HARNESS_VERSION, release
from tests.releases import rewritten, run_batch
from tests.verification.conftest import register
from verification.evaluations import record_verdict

pytestmark = pytest.mark.django_db


@pytest.fixture
def problems(cpu_release):
    call_command("import_problems", str(cpu_release.published))


def test_each_verdict_becomes_an_evaluation_marked_with_its_release(cpu_release, problems):
    call_command("import_release", str(cpu_release.path))
    measured = release.read(cpu_release.path)
    row = Release.objects.get()
    assert (row.name, row.arch, row.harness_version, row.sha256) == ("cpu-test", "cpu", HARNESS_VERSION, measured.sha256)
    assert row.harness_commit == measured.header["harness"]["commit"] and row.env == measured.header["env"]
    assert row.entries == 5 and row.header["sources"] == measured.header["sources"]
    for entry in measured.entries:
        evaluation = Evaluation.objects.get(candidate__problem__level=entry.level, candidate__problem__task=entry.task)
        assert (evaluation.arch, evaluation.harness_version, evaluation.release) == ("cpu", HARNESS_VERSION, row)
        assert (evaluation.status, evaluation.worker, evaluation.message_id) == (entry.status, "", "")
        assert evaluation.verdict == entry.verdict
        assert evaluation.speedup_eager == ((entry.verdict.get("timing") or {}).get("speedups") or {}).get("eager")
        candidate = evaluation.candidate
        assert (candidate.origin, candidate.origin_label, candidate.code) == ("import", "cuda-l1", entry.source)
        assert candidate.source_hash == entry.source_sha256
        claim = Claim.objects.get(candidate=candidate)
        assert (claim.source, claim.arch, claim.speedup_eager) == ("cuda-l1", "h100", entry.claims["scores"]["score_default"])


def everything() -> dict:
    return {
        model.__name__: list(model.objects.order_by("pk").values()) for model in (Release, Problem, Candidate, Claim, Evaluation)
    }


def test_importing_the_same_release_twice_changes_nothing(cpu_release, problems, capsys):
    call_command("import_release", str(cpu_release.path))
    before = everything()
    capsys.readouterr()
    call_command("import_release", str(cpu_release.path.parent))  # the folder: the same file found there
    assert everything() == before
    assert "cpu-test (cpu, cpu): 5 unchanged." in capsys.readouterr().out


def test_a_release_from_an_older_harness_is_imported_as_outdated_and_counts_nowhere(cpu_release, problems, tmp_path, capsys):
    older = rewritten(cpu_release.path, tmp_path / "older.jsonl.gz", harness_version="9", name="cpu-older")
    call_command("import_release", str(older))
    assert "Outdated: measured by harness 9" in capsys.readouterr().out
    assert Release.objects.get().is_outdated
    assert set(Evaluation.objects.values_list("harness_version", flat=True)) == {"9"}
    assert not Evaluation.objects.current().exists()
    assert best_per_problem("cpu") == []


def test_a_release_from_a_newer_harness_is_refused(cpu_release, problems, tmp_path):
    newer = rewritten(cpu_release.path, tmp_path / "newer.jsonl.gz", harness_version="99", name="cpu-newer")
    with pytest.raises(CommandError, match=rf"newer than this platform's \({HARNESS_VERSION}\): update the platform"):
        call_command("import_release", str(newer))
    assert not Release.objects.exists() and not Evaluation.objects.exists()


def test_an_entry_measured_on_another_source_of_its_problem_is_refused_alone(cpu_release, problems, capsys):
    problem = Problem.objects.get(level=1, task=1)
    Problem.objects.filter(pk=problem.pk).update(source=problem.source + "\n# another version\n")
    call_command("import_release", str(cpu_release.path))
    output = capsys.readouterr()
    assert "refused L1 T1 (cuda-l1:L1T1): the release measured another source of this problem" in output.err
    assert "import the problems it was measured on, or measure it again" in output.err
    assert "4 imported, 1 refused" in output.out
    assert not Evaluation.objects.filter(candidate__problem=problem).exists()


def test_an_entry_whose_problem_is_missing_is_refused_alone(cpu_release, problems, capsys):
    Problem.objects.filter(level=2, task=2).delete()
    call_command("import_release", str(cpu_release.path))
    output = capsys.readouterr()
    assert "no KernelBench level 2 task 2: import the problems first" in output.err
    assert Evaluation.objects.count() == 4


def test_a_release_name_never_names_another_file(cpu_release, problems, tmp_path):
    call_command("import_release", str(cpu_release.path))

    def remeasured(entry):
        entry["measured_at"] = "2030-01-01T00:00:00+00:00"

    other = rewritten(cpu_release.path, tmp_path / "other.jsonl.gz", edit=remeasured)
    with pytest.raises(CommandError, match="was imported from another file"):
        call_command("import_release", str(other))


def test_a_missing_release_folder_imports_nothing(tmp_path, capsys):
    call_command("import_release", str(tmp_path))
    assert "No release (*.jsonl.gz)" in capsys.readouterr().out


def test_a_live_verdict_of_a_later_harness_supersedes_an_imported_one(cpu_release, problems, tmp_path):
    call_command("import_release", str(rewritten(cpu_release.path, tmp_path / "older.jsonl.gz", harness_version="9")))
    imported_verdict = Evaluation.objects.get(candidate__problem__level=1, candidate__problem__task=1)
    live = Evaluation.objects.create(candidate=imported_verdict.candidate, arch="cpu", harness_version=HARNESS_VERSION)
    record_verdict(live, {**imported_verdict.verdict, "harness_version": HARNESS_VERSION}, worker="test-host:cpu:0")
    assert list(Evaluation.objects.current().filter(arch="cpu")) == [live]
    assert [row.pk for row in best_per_problem("cpu")] == [live.pk]
    imported_verdict.refresh_from_db()
    assert imported_verdict.release.name == "cpu-test" and imported_verdict.harness_version == "9"


@pytest.mark.django_db(transaction=True)
def test_staff_re_verify_an_imported_kernel_where_a_worker_is_live(cpu_release, problems, broker):
    call_command("import_release", str(cpu_release.path))
    kernel = Candidate.objects.get(problem__level=1, problem__task=1)
    register("cpu")
    request_reverification(candidates=[kernel])
    evaluation = Evaluation.objects.get(candidate=kernel, arch="cpu")
    assert (evaluation.status, evaluation.release, evaluation.harness_version) == ("queued", None, HARNESS_VERSION)
    call_command("import_release", str(cpu_release.path))  # the live job is not undone
    assert Evaluation.objects.get(candidate=kernel, arch="cpu").pk == evaluation.pk


@pytest.mark.django_db(transaction=True)
def test_re_verifying_where_no_worker_is_live_keeps_the_imported_verdict(cpu_release, problems, broker):
    call_command("import_release", str(cpu_release.path))
    kernel = Candidate.objects.get(problem__level=1, problem__task=1)
    register("h100")
    request_reverification(candidates=[kernel])
    assert Evaluation.objects.get(candidate=kernel, arch="cpu").release.name == "cpu-test"
    assert Evaluation.objects.get(candidate=kernel, arch="h100").status == "queued"


@pytest.mark.django_db(transaction=True)
def test_a_job_still_queued_for_the_same_verdict_is_taken_over(cpu_release, problems, broker):
    register("cpu")  # live while importing: each new candidate is also sent to the cpu queue
    call_command("import_release", str(cpu_release.path))
    assert set(Evaluation.objects.values_list("release__name", flat=True)) == {"cpu-test"}
    assert Evaluation.objects.filter(status="queued").count() == 0


def test_a_release_measured_later_replaces_an_earlier_ones_verdicts_whatever_the_order(cpu_release, problems, tmp_path):
    def later(entry):
        entry["measured_at"] = "2030-01-01T00:00:00+00:00"

    newer = rewritten(cpu_release.path, tmp_path / "later.jsonl.gz", name="cpu-later", edit=later)
    call_command("import_release", str(cpu_release.path))
    call_command("import_release", str(newer))
    assert set(Evaluation.objects.values_list("release__name", flat=True)) == {"cpu-later"}
    call_command("import_release", str(cpu_release.path))
    assert set(Evaluation.objects.values_list("release__name", flat=True)) == {"cpu-later"}
    assert Release.objects.count() == 2 and Evaluation.objects.count() == 5


def test_cuda_l1s_own_placeholder_entry_imports_as_the_harness_s_error(h100_release, tmp_path, sandboxed_harness):
    """The real H100 file's level 1 task 8, whose code is the string "None", measured on the CPU
    (its verdict needs no device), packed, and imported onto the problems of that same file."""
    state, out = tmp_path / "state", tmp_path / "releases" / "cpu-placeholder.jsonl.gz"
    run = ["run", "--state", str(state), "--device", "cpu", "--arch", "cpu", "--only", "L1T8", "--parallel", "1"]
    assert run_batch(*run).returncode == 0
    assert run_batch("pack", "--state", str(state), "--name", "cpu-placeholder", "--out", str(out)).returncode == 0
    call_command("import_problems", str(h100_release))
    call_command("import_release", str(out))
    evaluation = Evaluation.objects.get()
    assert (evaluation.candidate.problem.label, evaluation.candidate.code, evaluation.status) == ("L1 T8", "None", "error")
    assert evaluation.reason.startswith("defines_model_new")
    assert Claim.objects.get(candidate=evaluation.candidate).speedup_eager == 7.207
    assert Release.objects.get().sources == [
        {"origin": "cuda-l1", "path": "data/cuda-l1/h100.jsonl.gz", "sha256": release.sha256_file(h100_release)}
    ]
