"""The host and credential forms."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.core.exceptions import ValidationError
from django.db import transaction

from audit import log as audit
from audit.models import AuditEvent
from jobs.models import Credential, Host, Team
from jobs.models.names import name_taken


class WriteOnlyTextarea(forms.Textarea):
    """A textarea that never renders a value back, so a pasted private key cannot reappear in a page."""

    def format_value(self, value: Any) -> None:
        return None


class HostForm(forms.ModelForm):
    """A host and its login: a stored credential of the team, or a new one whose secret is write-only."""

    credential_mode = forms.ChoiceField(
        label="Credential",
        choices=[("existing", "Use a stored credential"), ("new", "Add a new credential"), ("none", "None yet")],
        widget=forms.RadioSelect,
    )
    new_credential_kind = forms.ChoiceField(
        label="Kind", choices=Credential.Kind.choices, initial=Credential.Kind.PRIVATE_KEY, required=False
    )
    new_credential_name = forms.CharField(
        label="Credential name", max_length=100, required=False, help_text="Empty: “<host name> login”."
    )
    private_key = forms.CharField(
        label="Private key",
        required=False,
        strip=False,
        widget=WriteOnlyTextarea(attrs={"rows": 6, "autocomplete": "off", "spellcheck": "false"}),
        help_text="Paste the whole key file (OpenSSH or PEM; ed25519, ecdsa or rsa). It is stored encrypted and "
        "never shown again.",
    )
    password = forms.CharField(
        required=False, strip=False, widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"})
    )
    passphrase = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Only for an encrypted private key.",
    )

    class Meta:
        model = Host
        fields = [
            "name",
            "address",
            "port",
            "username",
            "site",
            "os",
            "enabled",
            "exclusive",
            "run_base_dir",
            "ndisk64_path",
            "tunable",
            "cloud_metadata",
            "credential",
        ]
        labels = {
            "os": "Operating system",
            "run_base_dir": "Run directory",
            "ndisk64_path": "ndisk64 path",
            "username": "User name",
            "exclusive": "One run at a time on this host",
            "credential": "Stored credential",
            "tunable": "benchweb may tune block queues here",
            "cloud_metadata": "Ask the cloud's metadata service",
        }
        help_texts = {
            "site": "A site (e.g. eu-west) means two things. For analysis, the Stability card compares the hosts "
            "of one site for drops they share. For routing, the host's runs go to queue site.<name>, which only "
            "the workers serving that site run. Empty: no neighbours, and the default queue.",
            "enabled": "Untick to disable the host: no run starts on it until it is enabled again.",
            "tunable": "Off: benchweb never changes the host. On: a profile pinned to the queue CPUs sets the "
            "device's rq_affinity to 2 before fio starts, when the login user may write it (it stays so).",
            "cloud_metadata": "Off: nothing contacts a metadata service. On: the environment probe asks it for the "
            "instance type (169.254.169.254, or Alibaba's 100.100.100.200), giving up after 1 s each.",
        }

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.team = team
        self.instance.team = team
        self._initial_credential_id = self.instance.credential_id
        stored = Credential.objects.filter(team=team)
        credential_field = cast("forms.ModelChoiceField[Credential]", self.fields["credential"])
        credential_field.queryset = stored
        credential_field.empty_label = "— choose —"
        if self.instance.pk:
            mode = "existing" if self.instance.credential_id else "none"
        else:
            mode = "existing" if stored.exists() else "new"
        self.fields["credential_mode"].initial = mode

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if name_taken(Host.objects.filter(team=self.team), self.instance, name=name):
            raise ValidationError(f"Your team already has a host named {name!r}; choose another name.")
        return name

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # Form.clean returns cleaned_data
        mode = cleaned.get("credential_mode")
        if mode == "existing" and not cleaned.get("credential") and "credential" not in self.errors:
            self.add_error("credential", "Choose a stored credential, or choose “Add a new credential”.")
        elif mode == "new":
            self._clean_new_credential(cleaned)
        if mode != "existing":
            cleaned["credential"] = None
        return cleaned

    def _clean_new_credential(self, cleaned: dict[str, Any]) -> None:
        again = " Paste it again: secrets are never shown back."
        kind, passphrase = cleaned.get("new_credential_kind"), cleaned.get("passphrase") or ""
        if kind == Credential.Kind.PRIVATE_KEY:
            key = cleaned.get("private_key") or ""
            if not key.strip():
                self.add_error("private_key", "Paste the private key: the whole file, BEGIN and END lines included.")
            else:
                from jobs import ssh  # paramiko loads when a key is checked, not with the admin at start-up

                try:
                    ssh.load_private_key(key, passphrase or None)
                except ssh.SSHError as exc:
                    field = "passphrase" if "passphrase" in str(exc) else "private_key"
                    self.add_error(field, str(exc) + again)
        elif kind == Credential.Kind.PASSWORD:
            if not cleaned.get("password"):
                self.add_error("password", "Type the password of the login user.")
            if passphrase:
                self.add_error("passphrase", "A passphrase only applies to a private key; clear it.")
        name = cleaned.get("new_credential_name") or f"{cleaned.get('name') or 'host'} login"
        if Credential.objects.filter(team=self.team, name=name).exists():
            self.add_error("new_credential_name", f"Your team already has a credential named {name!r}; name this one.")
        cleaned["new_credential_name"] = name

    @transaction.atomic
    def save(self, commit: bool = True, user: Any = None) -> Host:
        host = super().save(commit=False)
        data = self.cleaned_data
        if data["credential_mode"] == "new":
            credential = Credential(team=self.team, name=data["new_credential_name"], kind=data["new_credential_kind"])
            is_key = credential.kind == Credential.Kind.PRIVATE_KEY
            credential.set_secret(data["private_key"] if is_key else data["password"], data["passphrase"])
            credential.save()
            audit.record(self.team, user, AuditEvent.Action.CREDENTIAL_CREATED, credential, kind=credential.kind)
            host.credential = credential
        changed = self.instance.pk and host.credential_id != self._initial_credential_id
        host.save()
        if changed:
            audit.record(self.team, user, AuditEvent.Action.HOST_CREDENTIAL_CHANGED, host,
                         credential=str(host.credential) if host.credential else None)  # fmt: skip
        return host


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
        assert cleaned is not None  # Form.clean returns cleaned_data
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
