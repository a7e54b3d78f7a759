"""What `release report` reads from a release or a batch's state folder, beyond what the measured
release's own test covers (tests/harness/test_release.py): records made by hand, no verification."""

import gzip
import json

from evaluation.harness import release, release_report
from tests.harness.conftest import REPO


def test_the_report_tells_the_problem_s_own_code_from_a_rewrite_by_the_cuda_l1_file_it_came_from(tmp_path):
    # CUDA-L1's L3 T29 is the problem's own code; a release names problems by hash, the file gives them back.
    published = REPO / "data" / "cuda-l1" / "h100.jsonl.gz"
    with gzip.open(published, "rt") as handle:
        row = next(r for r in map(json.loads, handle) if (r["level_id"], r["task_id"]) == (3, 29))
    settings = {
        "arch": "h100",
        "harness": {"version": "12"},
        "sources": [{"origin": "cuda-l1", "path": "data/cuda-l1/h100.jsonl.gz", "sha256": release.sha256_file(published)}],
    }
    (tmp_path / release.STATE_BATCH).write_text(json.dumps(settings))
    entry = {
        "key": "cuda-l1:L3T29",
        "level": 3,
        "task": 29,
        "problem_sha256": release.sha256_text(row["ref_code"]),
        "source": row["custom_code"],
        "claims": None,
        "verdict": {"status": "verified", "checks": [], "timing": {"speedups": {"eager": 1.0}}},
    }
    (tmp_path / release.STATE_RECORDS).write_text(json.dumps(entry) + "\n")

    shown = release_report.report(tmp_path)

    assert "kinds (verified of all): unchanged 1/1" in shown
    assert "level 3: eager -/- (n=0), ours alone over all 1.00 (n=1)" in shown


def test_ours_and_the_claims_are_compared_over_the_same_entries():
    # An entry the publisher made no claim for would have weighed in ours and not in theirs.
    def entry(speedup, claim):
        timing = {"speedups": {"eager": speedup}}
        claims = {"scores": {release_report.CLAIMED_AS["eager"]: claim}} if claim else None
        return {"level": 1, "claims": claims, "verdict": {"status": "verified", "timing": timing}}

    lines = release_report.speedups_by_level([entry(2.0, 4.0), entry(8.0, None)])

    assert lines[1] == "  level 1: eager 2.00/4.00 (n=1), ours alone over all 4.00 (n=2)"


def test_the_report_splits_the_timing_by_measure():
    # The H200 batch spent 32 s of a verdict's 50 s on its GPU timing: which measure, the next run says.
    cost = {"total_s": 60.0, "steps_s": {"time": 32.0}, "timing_s": {"latency": 4.0, "steady_state": 20.0, "device_time": 7.5}}
    lines = release_report.where_time_went([{"verdict": {"cost": cost}}], [], [])

    shown = {line.strip().rsplit(None, 3)[0]: float(line.split()[-3]) for line in lines[1:]}
    assert shown == {
        "total": 60.0,
        "timing": 32.0,
        "one call at a time (latency)": 4.0,
        "steady state": 20.0,
        "device time (graph replays)": 7.5,
    }
