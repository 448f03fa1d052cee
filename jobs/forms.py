from __future__ import annotations

from typing import Any

from django import forms

from jobs.models import Credential


class CredentialForm(forms.ModelForm):
    """Secrets are write-only: the form never renders a stored value back, and blank keeps it."""

    secret = forms.CharField(
        label="Password or private key",
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Paste the private key (OpenSSH or PEM) or type the password. Leave blank to keep the stored one.",
    )
    passphrase = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Only for an encrypted private key.",
    )

    class Meta:
        model = Credential
        fields = ["team", "name", "kind"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if not self.instance.pk and not cleaned.get("secret"):
            self.add_error("secret", "Enter the password or paste the private key.")
        if cleaned.get("passphrase") and cleaned.get("kind") != Credential.Kind.PRIVATE_KEY:
            self.add_error("passphrase", "A passphrase only applies to a private key; clear it or change the kind.")
        return cleaned

    def save(self, commit: bool = True) -> Credential:
        credential = super().save(commit=False)
        if self.cleaned_data.get("secret"):
            credential.set_secret(self.cleaned_data["secret"], self.cleaned_data.get("passphrase", ""))
        if commit:
            credential.save()
        return credential
