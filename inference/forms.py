"""The demo's form: a module to optimize, the backend to ask, and how many rounds.

Each refusal says what to do, and the page shows it beside its field (templates/inference/demo.html).
"""

from typing import cast

from django import forms

from court.forms import ProblemForm

MAX_ROUNDS = 5


class RunForm(ProblemForm):
    backend = forms.ChoiceField(label="Model backend")
    max_rounds = forms.IntegerField(
        label="Rounds",
        min_value=1,
        max_value=MAX_ROUNDS,
        initial=2,
        error_messages={
            "required": f"Say how many rounds the model gets: a number from 1 to {MAX_ROUNDS}.",
            "invalid": f"Rounds is a whole number from 1 to {MAX_ROUNDS}.",
            "min_value": f"A run needs at least one round: choose from 1 to {MAX_ROUNDS}.",
            "max_value": f"A run has at most {MAX_ROUNDS} rounds here: choose from 1 to {MAX_ROUNDS}.",
        },
    )

    def __init__(self, *args, backends: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["source"].error_messages["required"] = (
            "Paste a PyTorch module (Model, get_inputs, get_init_inputs) into the editor, "
            "or load one of the example problems above."
        )
        names = ", ".join(label for _, label in backends)
        backend = cast(forms.ChoiceField, self.fields["backend"])
        backend.choices = backends
        backend.initial = backends[0][0] if backends else None
        self.fields["backend"].error_messages.update(
            required=f"Choose a model backend: {names}.",
            invalid_choice=f"That backend is not available here: choose one of {names}.",
        )

    def _post_clean(self):
        super()._post_clean()
        # Screen readers read a refused field's reason with it (the page shows it as `<name>-errors`).
        for name in self.errors:
            if name in self.fields:
                self.fields[name].widget.attrs["aria-describedby"] = f"{name}-errors"
