"""A kernel's page shows its measurements, offers downloads, and takes hack reports."""

import io
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from court.models import Evaluation, HackReport
from court.selectors import evaluations_of
from evaluation.harness import HARNESS_VERSION
from tests.court.factories import make_candidate
from verification.evaluations import record_verdict

pytestmark = pytest.mark.django_db

VERDICT = {
    "status": "verified",
    "reason": "All checks passed.",
    "checks": [{"name": "outputs_match_reference", "passed": True, "detail": "max rel error 1e-7"}],
    "correctness": {
        "trials": 3,
        "inputs_per_trial": 2,
        "max_abs_error": 1e-7,
        "max_rel_error": 1e-7,
        "precision_tier": "exact-fp32",
    },
    "timing": {
        "method": "CUDA events, device-wide sync, L2 flush, rotated inputs",
        "candidate": {"median_ms": 0.25, "iqr_ms": 0.01, "samples": 100},
        "baselines": {"eager": {"median_ms": 0.5, "iqr_ms": 0.02, "samples": 100}},
        "speedups": {"eager": 2.0},
    },
    "kernels": {"candidate": [{"name": "fused_scale_kernel", "count": 1}], "reference": [{"name": "mul_kernel", "count": 1}]},
    "flags": ["reduced_precision"],
    "env": {"gpu": "NVIDIA H100 80GB HBM3", "torch": "2.13.0"},
}


@pytest.fixture
def kernel():
    candidate = make_candidate()
    evaluation = Evaluation.objects.create(candidate=candidate, arch="h100", harness_version=HARNESS_VERSION)
    record_verdict(evaluation, VERDICT, worker="gpu-host:h100:0")
    return candidate


def test_page_shows_measurements_kernels_flags_and_environment(client, kernel):
    content = client.get(kernel.get_absolute_url()).content.decode()
    for expected in ("0.2500", "fused_scale_kernel", "reduced_precision", "NVIDIA H100 80GB HBM3", "2.00x", "exact-fp32"):
        assert expected in content


def test_page_states_a_null_result_and_which_stream_raw_launches_go_to(client):
    candidate = make_candidate()
    evaluation = Evaluation.objects.create(candidate=candidate, arch="h100", harness_version=HARNESS_VERSION)
    verdict = json.loads(json.dumps(VERDICT))
    verdict["timing"]["null_result"] = {"why": "the candidate launched exactly the reference's kernels"}
    verdict["timing"]["speedups"] = {**verdict["timing"]["speedups"], "eager": 1.0}
    steady = {"candidate": {"median_ms": 0.26}, "baselines": {"eager": {"median_ms": 0.5}}, "speedups": {"eager": 1.91}}
    verdict["timing"]["headline"] = "steady_state"
    verdict["timing"]["measures"] = {
        "steady_state": steady,
        "device_time": {"unavailable": {"candidate": "its graph's replays gave other outputs"}},
    }
    verdict["static"] = {"stream_safety": {"summary": "every raw launch goes to the legacy default stream"}}
    record_verdict(evaluation, verdict, worker="gpu-host:h100:0")

    content = client.get(candidate.get_absolute_url()).content.decode()

    assert "1.0x by construction" in content and "exactly the reference&#x27;s kernels" in content
    assert "No device time (candidate): its graph&#x27;s replays gave other outputs" in content
    assert "Stream safety: every raw launch goes to the legacy default stream" in content
    # The headline measure's row states the verdict's 1.0, not the steady state's own reading.
    rows = Evaluation.objects.get(pk=evaluation.pk).measure_rows()
    assert [row["speedup"] for row in rows if row["side"] == "eager"] == [1.0]


def test_page_says_why_no_difference_is_stated_and_what_was_measured(client):
    candidate = make_candidate()
    evaluation = Evaluation.objects.create(candidate=candidate, arch="h100", harness_version=HARNESS_VERSION)
    verdict = json.loads(json.dumps(VERDICT))
    verdict["timing"]["speedups"] = {"eager": 1.0}
    verdict["timing"]["no_difference"] = {"why": "the A/A control read off 1.0", "measured_speedups": {"eager": 2.51}}
    record_verdict(evaluation, verdict, worker="gpu-host:h100:0")

    content = client.get(candidate.get_absolute_url()).content.decode()

    assert "No difference stated:" in content and "the A/A control read off 1.0" in content and "2.510x over eager" in content


def test_page_shows_a_diff_against_the_reference(client, kernel):
    content = client.get(kernel.get_absolute_url()).content.decode()
    assert "reference.py" in content and "kernel.py" in content


def test_py_download_is_the_stored_code_byte_for_byte(client, kernel):
    response = client.get(f"/kernels/{kernel.pk}/download.py")
    assert response["Content-Disposition"].startswith("attachment;")
    assert response.content == kernel.code.encode()


def test_bundle_holds_problem_kernel_verdict_script_and_harness(client, kernel):
    response = client.get(f"/kernels/{kernel.pk}/bundle.zip")
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    names = archive.namelist()
    root = names[0].split("/")[0]
    assert archive.read(f"{root}/kernel.py").decode() == kernel.code
    assert archive.read(f"{root}/problem.py").decode() == kernel.problem.source
    assert f"{root}/verdicts/h100-harness{HARNESS_VERSION}.json" in names
    assert b'"$PYTHON" -m evaluation.harness verify' in archive.read(f"{root}/verify.sh")
    assert f"{root}/evaluation/harness/verdict.py" in names


def test_bundle_is_the_same_bytes_at_every_download(client, kernel):
    first = client.get(f"/kernels/{kernel.pk}/bundle.zip").content
    time.sleep(2.1)  # a zip entry's time has two-second steps
    assert client.get(f"/kernels/{kernel.pk}/bundle.zip").content == first
    archive = zipfile.ZipFile(io.BytesIO(first))
    assert archive.namelist() == sorted(archive.namelist())


def run_compare(tmp_path, kernel, client, measured: dict) -> subprocess.CompletedProcess:
    zipfile.ZipFile(io.BytesIO(client.get(f"/kernels/{kernel.pk}/bundle.zip").content)).extractall(tmp_path)
    [root] = tmp_path.iterdir()
    (root / "measured.json").write_text(json.dumps(measured))
    return subprocess.run([sys.executable, "compare.py"], cwd=root, capture_output=True, text=True, timeout=30)


def test_bundle_compare_says_a_verdict_on_the_same_gpu_agrees(tmp_path, client, kernel):
    agreeing = {**VERDICT, "timing": {**VERDICT["timing"], "speedups": {"eager": 2.1}}}
    done = run_compare(tmp_path, kernel, client, agreeing)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "recorded 2.000x   here 2.100x" in done.stdout and "agrees with ours" in done.stdout


def test_bundle_compare_says_which_figures_differ(tmp_path, client, kernel):
    slower = {**VERDICT, "timing": {**VERDICT["timing"], "speedups": {"eager": 1.2}}}
    done = run_compare(tmp_path, kernel, client, slower)
    assert done.returncode == 1 and "DIFFERS from ours: eager" in done.stdout


def test_bundle_compare_on_another_device_compares_no_speedups(tmp_path, client, kernel):
    on_cpu = {**VERDICT, "env": {"device": "cpu"}, "timing": {**VERDICT["timing"], "speedups": {"eager": 0.9}}}
    done = run_compare(tmp_path, kernel, client, on_cpu)
    assert done.returncode == 0 and "No verdict of ours was measured on cpu" in done.stdout


def test_bundle_compare_fails_where_the_verification_failed_here_on_another_device(tmp_path, client, kernel):
    # A CPU without torch's baselines: no speedup to compare, but "error" where ours is "verified" is a failure.
    failed = {
        **VERDICT,
        "status": "error",
        "reason": "problem_runs: the problem's baselines failed at describe",
        "env": {"device": "cpu"},
        "log_excerpt": "Traceback (most recent call last):\nModuleNotFoundError: No module named 'torch'",
    }
    done = run_compare(tmp_path, kernel, client, failed)
    assert done.returncode == 1 and "DIFFERS: error here, verified in our verdicts" in done.stdout
    assert "ModuleNotFoundError: No module named 'torch'" in done.stdout


def test_bundle_says_what_to_install_before_running_anything(tmp_path, client, kernel):
    zipfile.ZipFile(io.BytesIO(client.get(f"/kernels/{kernel.pk}/bundle.zip").content)).extractall(tmp_path)
    [root] = tmp_path.iterdir()
    # A Python without torch (the system's; the suite's own has it).
    bare = next(p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if Path(p).exists())
    env = {**os.environ, "PYTHON": bare, "DEVICE": "cpu"}
    done = subprocess.run(["sh", "verify.sh"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "torch: pip install torch" in done.stderr and not (root / "measured.json").exists()
    assert "Needs: Python 3.11 or newer; torch" in (root / "README.txt").read_text()


def test_bundle_re_runs_the_verification_and_sets_it_beside_ours(tmp_path, client, kernel, sandboxed_harness):
    zipfile.ZipFile(io.BytesIO(client.get(f"/kernels/{kernel.pk}/bundle.zip").content)).extractall(tmp_path)
    [root] = tmp_path.iterdir()
    env = {**os.environ, "DEVICE": "cpu", "BASELINES": "eager", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    # The script passes its arguments on to the harness: the suite's plan (tests/suite_plan.py), not 30 s of sampling.
    plan = ["--plan", os.environ["COURT_HARNESS_PLAN"]]
    done = subprocess.run(["sh", "verify.sh", *plan], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((root / "measured.json").read_text())["status"] == "verified"
    assert "measured here on cpu: verified" in done.stdout
    assert "recorded h100-harness" in done.stdout and "No verdict of ours was measured on cpu" in done.stdout


def test_reporting_needs_an_account_and_the_login_page_says_why(client, kernel):
    response = client.get(f"/kernels/{kernel.pk}/report/", follow=True)
    assert response.redirect_chain[0][0] == f"/accounts/login/?next=/kernels/{kernel.pk}/report/"
    assert f"to report a reward hack on kernel #{kernel.pk}: reports are signed" in response.content.decode()


def test_a_signed_in_user_files_a_report_with_a_proof(client, kernel):
    client.force_login(get_user_model().objects.create_user("reporter"))
    response = client.post(
        f"/kernels/{kernel.pk}/report/",
        {
            "category": "caching",
            "text": "Returns the first output forever.",
            "proof_code": "import torch\ndef get_inputs():\n    return [torch.zeros(8)]\n",
        },
    )
    assert response.status_code == 302
    report = HackReport.objects.get()
    assert (report.candidate, report.category, report.reporter.username) == (kernel, "caching", "reporter")
    assert report.evaluation is not None


def test_a_proof_without_get_inputs_is_refused_with_a_reason(client, kernel):
    client.force_login(get_user_model().objects.create_user("reporter"))
    response = client.post(f"/kernels/{kernel.pk}/report/", {"category": "caching", "text": "x", "proof_code": "x = 1\n"})
    assert response.status_code == 200
    assert b"No function <code>get_inputs()</code>" in response.content
    assert not HackReport.objects.exists()


def test_leaderboard_lists_the_verified_kernel_and_filters_it(client, kernel):
    Evaluation.objects.filter(candidate=kernel).update(finished_at=timezone.now())
    response = client.get("/leaderboard/", follow=True)
    assert response.redirect_chain[-1][0] == "/leaderboard/h100/"
    assert f"#{kernel.pk}".encode() in response.content
    assert f"#{kernel.pk}".encode() not in client.get("/leaderboard/h100/", {"flag": "same_kernels_as_reference"}).content


def test_empty_leaderboard_says_so(client):
    assert b"No kernel is verified yet" in client.get("/leaderboard/").content


def test_the_page_lists_a_kernels_verdicts_newest_harness_first(kernel):
    newer = str(int(HARNESS_VERSION) + 1)  # a number more digits may not order as text does ("12" after "9")
    for version in ("9", newer, "2"):
        Evaluation.objects.create(
            candidate=kernel, arch="h100", harness_version=version, status="verified", finished_at=timezone.now()
        )
    assert [e.harness_version for e in evaluations_of(kernel)] == [newer, HARNESS_VERSION, "9", "2"]


def test_a_flags_finding_is_shown_only_where_it_says_more_than_its_meaning(client):
    # Issue 33: each flag's "Here:" repeated its general meaning.
    from evaluation.harness.evidence import CANDIDATE, TIMED, Call, Evidence
    from evaluation.harness.flags import host_bound

    evidence = Evidence(device="cuda", baselines=("eager",))
    evidence.calls = [Call(CANDIDATE, TIMED, 0, {"ok": True}, 1.0, timing={"ms": 0.2, "host_ms": 0.16}) for _ in range(5)]
    found = {
        "host_bound": host_bound(evidence),
        "nondeterministic_problem": "the reference gives different outputs for the same inputs and seed",
    }
    candidate = make_candidate()
    verdict = {**VERDICT, "flags": sorted(found), "flag_details": found}
    record_verdict(Evaluation.objects.create(candidate=candidate, arch="h100", harness_version=HARNESS_VERSION), verdict)

    content = client.get(candidate.get_absolute_url()).content.decode()
    shown = content.split('<dl class="flag-meanings">', 1)[1].split("</dl>", 1)[0]

    assert shown.count("Here:") == 1
    assert "Here: the host was busy inside the call for most of the sample (candidate 0.16 ms of its 0.2 ms)." in shown
    assert "varies" not in shown.split("Here:", 1)[1]
