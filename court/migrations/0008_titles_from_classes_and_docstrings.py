"""Problems imported without a title (KernelBench's level 3 documents only its parameters: "L3 T1 —")
get the one court.validation now derives from their classes' names and docstrings at import.
Titles staff or an import gave are left alone."""

from django.db import migrations


def title_untitled_problems(apps, schema_editor):
    # The import's own rule, so a problem imported after this reads the same as one titled here.
    from court.validation import problem_title

    Problem = apps.get_model("kernels", "Problem")
    for problem in Problem.objects.filter(title="").only("pk", "source").iterator():
        title = problem_title(problem.source)
        if title:
            Problem.objects.filter(pk=problem.pk).update(title=title)


class Migration(migrations.Migration):
    dependencies = [
        ("kernels", "0007_pastes_belong_to_their_runs"),
    ]

    operations = [migrations.RunPython(title_untitled_problems, migrations.RunPython.noop)]
