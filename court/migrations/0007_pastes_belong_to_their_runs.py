"""Pasted modules belong to their runs (issue 18): every run gets a link key of its own, and the
pastes listed until now become unlisted (those staff featured stay so: a choice of theirs)."""

import secrets

from django.db import migrations, models

import court.models.runs


def key_each_run_and_unlist_pastes(apps, schema_editor):
    OptimizationRun = apps.get_model("kernels", "OptimizationRun")
    Problem = apps.get_model("kernels", "Problem")
    for run in OptimizationRun.objects.filter(link_key="").only("pk").iterator():
        OptimizationRun.objects.filter(pk=run.pk).update(link_key=secrets.token_urlsafe(16))
    Problem.objects.filter(origin="user", visibility="listed").update(visibility="unlisted")


def relist_pastes(apps, schema_editor):
    Problem = apps.get_model("kernels", "Problem")
    Problem.objects.filter(origin="user", visibility="unlisted").update(visibility="listed")


class Migration(migrations.Migration):
    dependencies = [
        ("kernels", "0006_leaderboard_snapshots"),
    ]

    operations = [
        migrations.AddField(
            model_name="optimizationrun",
            name="link_key",
            field=models.CharField(default="", help_text="The secret in the run's link", max_length=32),
        ),
        migrations.AlterField(
            model_name="problem",
            name="visibility",
            field=models.CharField(
                choices=[
                    ("listed", "Listed"),
                    ("featured", "Featured"),
                    ("unlisted", "Unlisted (a paste, seen through its runs)"),
                    ("hidden", "Hidden"),
                ],
                default="listed",
                max_length=16,
            ),
        ),
        migrations.RunPython(key_each_run_and_unlist_pastes, relist_pastes),
        migrations.AlterField(
            model_name="optimizationrun",
            name="link_key",
            field=models.CharField(
                default=court.models.runs.new_link_key, help_text="The secret in the run's link", max_length=32
            ),
        ),
    ]
