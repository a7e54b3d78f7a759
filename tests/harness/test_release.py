"""Measured releases (evaluation/harness/release.py), written by benchmarks/release_batch.py from the
real harness's verdicts on this CPU, and read back: a release holds what the batch measured with
its provenance, a resumed batch measures nothing twice, and a file that was altered is refused
with what to fix."""

import gzip
import json
import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest

from evaluation.harness import release
from evaluation.harness.verdict import HARNESS_VERSION
from tests.harness.conftest import CANDIDATES, PROBLEMS, SMALL_PLAN
from tests.releases import PUBLISHED, REPO, batch_run_args, run_batch


def test_the_batch_measures_every_published_entry_into_a_release(cpu_release):
    measured = release.read(cpu_release.path)
    header = measured.header
    assert (header["name"], header["arch"], header["device"], header["baselines"]) == ("cpu-test", "cpu", "cpu", ["eager"])
    assert header["harness"]["version"] == HARNESS_VERSION and len(header["harness"]["commit"]) == 40
    assert header["env"]["device"] == "cpu" and header["env"]["torch"] and header["env"]["python"]
    assert header["sources"] == [
        {"origin": "cuda-l1", "path": cpu_release.published.name, "sha256": release.sha256_file(cpu_release.published)}
    ]
    assert header["plan"]["trials"] == 2 and "build_cache_dir" not in header["limits"] and header["missing"] == []
    assert [(e.level, e.task) for e in measured.entries] == [(level, task) for level, task, *_ in PUBLISHED]
    assert Counter(e.status for e in measured.entries) == {"verified": 2, "rejected": 1, "incorrect": 1, "error": 1}
    lazy = next(e for e in measured.entries if (e.level, e.task) == (1, 2))
    assert (lazy.status, lazy.failed_check, lazy.origin) == ("rejected", "output_is_plain_tensor", "cuda-l1")
    assert lazy.claims == {
        "by": "cuda-l1",
        "arch": "h100",
        "scores": {
            "score_default": 17.8,
            "score_torch_compile_default": 14.24,
            "score_torch_compile_reduce_overhead": None,
            "score_cuda_graph": None,
            "score_cudnn": None,
        },
    }


def test_the_string_none_gets_the_harness_s_own_error_verdict(cpu_release):
    placeholder = next(e for e in release.read(cpu_release.path).entries if e.source == "None")
    assert (placeholder.status, placeholder.failed_check) == ("error", "defines_model_new")
    assert placeholder.source_sha256 == release.sha256_text("None")


def test_a_resumed_batch_measures_nothing_twice_and_packs_the_same_bytes(cpu_release, tmp_path):
    state = shutil.copytree(cpu_release.state, tmp_path / "state")
    records = (state / release.STATE_RECORDS).read_text()
    done = run_batch(*batch_run_args(cpu_release.published, state))
    assert done.returncode == 0, done.stderr
    assert "5 measured, 0 to go" in done.stdout
    assert (state / release.STATE_RECORDS).read_text() == records
    again = tmp_path / "again.jsonl.gz"
    packed = run_batch("pack", "--state", str(state), "--name", "cpu-test", "--out", str(again))
    assert packed.returncode == 0, packed.stderr
    assert again.read_bytes() == cpu_release.path.read_bytes()


def test_a_batch_resumed_with_other_settings_is_refused(cpu_release, tmp_path):
    state = shutil.copytree(cpu_release.state, tmp_path / "state")
    done = run_batch(*batch_run_args(cpu_release.published, state, "--baselines", "eager,compile"))
    assert done.returncode != 0
    assert "was started with another --baselines" in done.stderr


def test_a_batch_with_entries_left_packs_only_when_asked(cpu_release, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    shutil.copy(cpu_release.state / release.STATE_BATCH, state)
    lines = (cpu_release.state / release.STATE_RECORDS).read_text().splitlines()
    (state / release.STATE_RECORDS).write_text("\n".join(lines[:3]) + "\n")
    out = tmp_path / "partial.jsonl.gz"
    refused = run_batch("pack", "--state", str(state), "--name", "cpu-partial", "--out", str(out))
    assert refused.returncode == 1 and "2 of 5 planned entries have no verdict yet" in refused.stderr
    assert "run the batch again" in refused.stderr and not out.exists()
    packed = run_batch("pack", "--state", str(state), "--name", "cpu-partial", "--out", str(out), "--partial")
    assert packed.returncode == 0, packed.stderr
    partial = release.read(out)
    assert len(partial.entries) == 3 and len(partial.header["missing"]) == 2


def test_the_report_gives_statuses_checks_kinds_speedups_beside_the_claims_and_where_the_time_went(cpu_release):
    def report(path):
        done = subprocess.run(
            [sys.executable, "-m", "evaluation.harness", "release", "report", str(path)],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    released, state = report(cpu_release.path), report(cpu_release.state)

    assert "5 verdicts: verified 2, " in released
    assert "output_is_plain_tensor 1" in released and "defines_model_new 1" in released
    assert "none 0/1" in released  # CUDA-L1's placeholder "None": no kernel at all
    # The two verified entries were claimed at 1.05x and 40x: a geomean of 6.48 beside ours.
    assert re.search(r"level 1: eager \d+\.\d\d/6\.48 \(n=2\)", released)
    assert "process starts" in released and "baseline eager built" in released and "checks" in released
    assert "verifications: 5 on 1 GPUs (cpu 5)" in state and "verdicts per GPU-hour" in state


def test_the_harness_cli_checks_a_release():
    done = subprocess.run(
        [sys.executable, "-m", "evaluation.harness", "release", "check", "/nonexistent.jsonl.gz"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "cannot read it" in done.stderr


def test_the_harness_cli_summarizes_a_release(cpu_release):
    done = subprocess.run(
        [sys.executable, "-m", "evaluation.harness", "release", "check", str(cpu_release.path)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "cpu-test: 5 verdicts on cpu" in done.stdout and "2 verified" in done.stdout


# -- altered files: each refused with what is wrong -------------------------------------------------


def lines_of(path) -> list[dict]:
    return [json.loads(line) for line in gzip.decompress(path.read_bytes()).decode().splitlines()]


def written(path, rows: list[dict]):
    path.write_bytes(gzip.compress("".join(json.dumps(row) + "\n" for row in rows).encode()))
    return path


def alter_source(rows):
    rows[1]["source"] += "\n# edited after measuring\n"


def alter_verdict_harness(rows):
    rows[2]["verdict"]["harness_version"] = "9"


def alter_format_version(rows):
    rows[0]["version"] = release.FORMAT_VERSION + 1


def alter_count(rows):
    rows.pop()


def alter_arch(rows):
    rows[0]["arch"] = "h100"


def alter_environment(rows):
    rows[1]["verdict"]["env"]["torch"] = "1.0.0"


@pytest.mark.parametrize(
    "alter, message",
    [
        (alter_source, "does not hash to its source_sha256"),
        (alter_verdict_harness, "a release holds the verdicts of one harness"),
        (alter_format_version, f"this code reads version {release.FORMAT_VERSION}"),
        (alter_count, "the header counts 5 entries and 4 follow"),
        (alter_arch, "a release measured on the CPU is arch cpu"),
        (alter_environment, "measured in another environment than the header's (torch)"),
    ],
)
def test_an_altered_release_is_refused_with_what_to_fix(cpu_release, tmp_path, alter, message):
    rows = lines_of(cpu_release.path)
    alter(rows)
    with pytest.raises(release.ReleaseError, match=message.replace("(", r"\(").replace(")", r"\)")):
        release.read(written(tmp_path / "altered.jsonl.gz", rows))


def test_a_file_that_is_not_a_release_is_refused(cpu_release, tmp_path):
    with pytest.raises(release.ReleaseError, match="not a Kernel Court release"):
        release.read(cpu_release.published)
    plain = tmp_path / "plain.jsonl"
    plain.write_text("{}\n")
    with pytest.raises(release.ReleaseError, match="not a gzip-compressed"):
        release.read(plain)


def test_harness_versions_compare_as_numbers():
    assert release.is_older_harness("9", "10") and not release.is_older_harness("10", "9")
    assert release.is_older_harness("10", "10.1") and not release.is_older_harness("10", "10")


def test_the_batch_measures_the_builtin_optimizers_candidates(tmp_path, sandboxed_harness):
    """A folder as benchmarks/builtin_optimizer_gpu.py writes it: a manifest, each problem's source and its candidates."""
    folder = tmp_path / "builtin"
    (folder / "level1_task001").mkdir(parents=True)
    shutil.copy(PROBLEMS / "linear_relu.py", folder / "level1_task001" / "problem.py")
    shutil.copy(CANDIDATES / "honest_linear_relu.py", folder / "level1_task001" / "01-fused_epilogue.py")
    manifest = [{"level": 1, "task": 1, "folder": "level1_task001", "candidates": [{"file": "01-fused_epilogue.py"}]}]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    state, out = tmp_path / "state", tmp_path / "builtin.jsonl.gz"
    done = run_batch(*batch_run_args(folder, state, "--source", "builtin", "--candidates", str(folder), plan=SMALL_PLAN))
    assert done.returncode == 0, done.stderr
    assert run_batch("pack", "--state", str(state), "--name", "cpu-builtin", "--out", str(out)).returncode == 0
    (entry,) = release.read(out).entries
    assert (entry.key, entry.origin, entry.claims) == ("builtin:L1T1:01-fused_epilogue.py", "builtin", None)
    assert entry.status == "verified"
    assert entry.problem_sha256 == release.sha256_text((PROBLEMS / "linear_relu.py").read_text())
    assert release.read(out).header["sources"][0]["origin"] == "builtin"
