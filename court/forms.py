"""Forms for what a visitor pastes, and for signing up."""

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm

from court.models import HackReport
from court.validation import SourceError, validate_problem, validate_proof_inputs


class ProblemForm(forms.Form):
    source = forms.CharField(
        label="PyTorch module (KernelBench form: Model, get_inputs, get_init_inputs)",
        widget=forms.Textarea(attrs={"rows": 18, "spellcheck": "false", "class": "code-input"}),
        max_length=settings.PROBLEM_SOURCE_MAX_BYTES,
        strip=False,
    )

    def clean_source(self):
        source = self.cleaned_data["source"]
        try:
            validate_problem(source)
        except SourceError as exc:
            raise forms.ValidationError(exc.problems) from None
        return source


class HackReportForm(forms.ModelForm):
    class Meta:
        model = HackReport
        fields = ["category", "text", "proof_code"]
        labels = {
            "category": "What kind of hack",
            "text": "What the kernel does, and how you found out",
            "proof_code": "Proof (optional): a get_inputs() on which the kernel is wrong",
        }
        widgets = {
            "text": forms.Textarea(attrs={"rows": 5}),
            "proof_code": forms.Textarea(attrs={"rows": 8, "spellcheck": "false", "class": "code-input"}),
        }

    def clean_proof_code(self):
        proof = self.cleaned_data["proof_code"]
        if proof.strip():
            try:
                validate_proof_inputs(proof)
            except SourceError as exc:
                raise forms.ValidationError(exc.problems) from None
        return proof


class SignUpForm(UserCreationForm):
    """A new account with the e-mail address its password resets are sent to."""

    email = forms.EmailField(label="E-mail address", help_text="Where a password reset is sent.")

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")

    def clean_email(self):
        email = self.cleaned_data["email"]
        # One account per address: a password reset mails every account that has it.
        if get_user_model().objects.filter(email__iexact=email).exists():
            raise forms.ValidationError(
                "An account already uses this e-mail address. If it is yours, log in, or have its password "
                "reset at `/accounts/password_reset/`; otherwise use another address."
            )
        return email
