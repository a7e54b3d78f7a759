"""The demo's form: a module to optimize, the backend to ask, and how many rounds."""

from django import forms

from kernels.forms import ProblemForm


class RunForm(ProblemForm):
    backend = forms.ChoiceField(label="Model backend")
    max_rounds = forms.IntegerField(label="Rounds", min_value=1, max_value=5, initial=2)

    def __init__(self, *args, backends: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["backend"].choices = backends
        self.fields["backend"].initial = backends[0][0] if backends else None
