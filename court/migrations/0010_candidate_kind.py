from django.db import migrations, models

from evaluation.harness.static_analysis import KINDS, optimization_kind


def fill_kinds(apps, schema_editor):
    """Every existing candidate's kind, from its code and its problem's (what create_candidate now sets)."""
    Candidate = apps.get_model("kernels", "Candidate")
    for candidate in Candidate.objects.select_related("problem").only("pk", "code", "problem__source").iterator():
        Candidate.objects.filter(pk=candidate.pk).update(kind=optimization_kind(candidate.code, candidate.problem.source))


class Migration(migrations.Migration):
    dependencies = [
        ("kernels", "0009_measured_releases"),
    ]

    operations = [
        migrations.AddField(
            model_name="candidate",
            name="kind",
            field=models.CharField(blank=True, choices=list(KINDS.items()), db_index=True, max_length=16),
        ),
        migrations.RunPython(fill_kinds, migrations.RunPython.noop),
    ]
