"""Internal details (court.models.internal_details): a staff-only `error_detail` on runs and
evaluations, and the raw errors that older code wrote into public fields moved there."""

import re

from django.db import migrations, models
from django.db.models import Q

# What the code wrote before this migration (inference.actors, verification.actors and .proofs), as
# it was: a run's error was the raw exception unless its worker had stopped too often; a failure
# of an evaluation or a proof check on our side quoted the exception in brackets.
PUBLIC_RUN_ERROR_START = "The run's worker stopped"
RUN_ERROR = "The run stopped on an error of ours, not of the problem's; staff can see what happened. Start it again."
RAW_EVALUATION = re.compile(r"The evaluation failed (\d+) times on our side \((.*)\); staff can re-verify it\.", re.DOTALL)
EVALUATION_ERROR = "The evaluation failed {} times on our side, not because of this kernel; staff can re-verify it."
RAW_PROOF = re.compile(r"The check failed (\d+) times on our side \((.*)\)\.", re.DOTALL)
PROOF_ERROR = "The check failed {} times on our side, not because of the proof; staff will look."
# court.models.internal_details.without_paths, as it was.
FOLDERS = re.compile(r"(?<![\w.~:/-])/(?:[\w.+@-]+/)+")


def _raw_run_error(error: str) -> bool:
    return bool(error) and not error.startswith(PUBLIC_RUN_ERROR_START)


def _public_reason(reason: str, raw: re.Pattern, sentence: str) -> tuple[str, str]:
    """The reason to show, and the raw error it held (or "")."""
    quoted = raw.fullmatch(reason)
    if quoted:
        return sentence.format(quoted.group(1)), quoted.group(2)
    return FOLDERS.sub(".../", reason), ""


def move_raw_errors(apps, schema_editor):
    OptimizationRun = apps.get_model("kernels", "OptimizationRun")
    RunEvent = apps.get_model("kernels", "RunEvent")
    Evaluation = apps.get_model("kernels", "Evaluation")
    ProofCheck = apps.get_model("kernels", "ProofCheck")

    for run in OptimizationRun.objects.exclude(error=""):
        if _raw_run_error(run.error):
            run.error_detail, run.error = run.error, RUN_ERROR
            run.save(update_fields=["error", "error_detail"])
    RunEvent.objects.filter(kind="error").update(text=RUN_ERROR)  # only the raw exception was ever written there
    for event in RunEvent.objects.filter(kind="status", run__status="failed"):
        if _raw_run_error((event.data or {}).get("error") or ""):
            event.data = {**event.data, "error": RUN_ERROR}
            event.save(update_fields=["data"])

    quoting = Q(reason__contains="/") | Q(reason__contains="on our side (")
    for evaluation in Evaluation.objects.filter(quoting):
        evaluation.reason, detail = _public_reason(evaluation.reason, RAW_EVALUATION, EVALUATION_ERROR)
        evaluation.error_detail = detail or evaluation.error_detail
        evaluation.save(update_fields=["reason", "error_detail"])
    for check in ProofCheck.objects.filter(quoting):
        check.reason, detail = _public_reason(check.reason, RAW_PROOF, PROOF_ERROR)
        if detail:
            check.verdict = {**check.verdict, "reason": check.reason, "error_detail": detail}
        check.save(update_fields=["reason", "verdict"])


class Migration(migrations.Migration):
    dependencies = [
        ("kernels", "0003_job_messages"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="error_detail",
            field=models.TextField(blank=True, help_text="Staff only: the raw error behind a failure of ours"),
        ),
        migrations.AddField(
            model_name="optimizationrun",
            name="error_detail",
            field=models.TextField(blank=True, help_text="Staff only: the raw error behind `error`"),
        ),
        migrations.AlterField(
            model_name="evaluation",
            name="reason",
            field=models.TextField(blank=True, help_text="Public: the deciding check's message, or what failed and what to do"),
        ),
        migrations.AlterField(
            model_name="evaluation",
            name="worker",
            field=models.CharField(blank=True, help_text="Staff only: the worker that ran it (host, device)", max_length=200),
        ),
        migrations.RunPython(move_raw_errors, migrations.RunPython.noop),
    ]
