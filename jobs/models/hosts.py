"""Hosts and the credentials benchweb logs in with (encrypted at rest)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from jobs import addresses, crypto, paths

if TYPE_CHECKING:  # paramiko is loaded where a session is opened, not with the models
    from jobs import ssh
from jobs.models.teams import Team


class Credential(models.Model):
    """An SSH secret. Only ciphertext is stored; nothing renders the plaintext back."""

    class Kind(models.TextChoices):
        PASSWORD = "password", "Password"
        PRIVATE_KEY = "private_key", "Private key"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="credentials")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    secret_token = models.TextField(editable=False)
    passphrase_token = models.TextField(blank=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="credential_name_unique_in_team")]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"

    def set_secret(self, secret: str, passphrase: str = "") -> None:
        if not secret:
            raise ValidationError({"secret": "Enter the password or paste the private key."})
        self.secret_token = crypto.encrypt(secret)
        self.passphrase_token = crypto.encrypt(passphrase) if passphrase else ""

    def reveal_secret(self) -> str:
        return crypto.decrypt(self.secret_token)

    def reveal_passphrase(self) -> str:
        return crypto.decrypt(self.passphrase_token) if self.passphrase_token else ""


site_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9_-]*$", "Use lowercase letters, digits, '-' and '_' (it names a worker queue), e.g. eu-west."
)


class Host(models.Model):
    class OS(models.TextChoices):
        LINUX = "linux", "Linux"
        AIX = "aix", "AIX"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="hosts")
    name = models.CharField(max_length=100)
    address = models.CharField(
        max_length=255,
        help_text="What the workers connect to: a host name (letters, digits and '-' in dot-separated labels, e.g. "
        "bench-01.example.com) or an IP address (192.0.2.10, 2001:db8::10). The port has its own field.",
    )
    port = models.PositiveIntegerField(default=22, validators=[MinValueValidator(1), MaxValueValidator(65535)])
    username = models.CharField(max_length=64)
    credential = models.ForeignKey(Credential, on_delete=models.PROTECT, null=True, blank=True, related_name="hosts")
    site = models.CharField(max_length=50, blank=True, validators=[site_validator])
    os = models.CharField(max_length=8, choices=OS.choices, default=OS.LINUX)
    host_key_type = models.CharField(max_length=40, blank=True)
    host_key_b64 = models.TextField(blank=True)
    host_key_fingerprint = models.CharField(
        max_length=100, blank=True, help_text="SHA256 fingerprint, set on approval."
    )
    host_key_approved_at = models.DateTimeField(null=True, blank=True)
    host_key_approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # A scanned key waits here until a person compares its fingerprint and approves it.
    scanned_key_type = models.CharField(max_length=40, blank=True, editable=False)
    scanned_key_b64 = models.TextField(blank=True, editable=False)
    scanned_key_fingerprint = models.CharField(max_length=100, blank=True, editable=False)
    scanned_at = models.DateTimeField(null=True, blank=True, editable=False)
    run_base_dir = models.CharField(
        max_length=1024, blank=True, help_text="Where run directories go on the host. Empty: ~/.benchweb/runs."
    )
    exclusive = models.BooleanField(
        default=False, help_text="At most one run on this host at a time (its disks share a backend)."
    )
    ndisk64_path = models.CharField(
        max_length=1024, blank=True, help_text="Path of ndisk64 on the host when it is not on the PATH."
    )
    enabled = models.BooleanField(default=True)
    tunable = models.BooleanField(
        default=False,
        help_text="benchweb may set block-queue tunables (rq_affinity=2) on this host when a profile asks for it.",
    )
    cloud_metadata = models.BooleanField(
        default=False, help_text="The environment probe may ask the cloud's metadata service (off: never contacted)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The one chain of watching steps that looks after this host's running runs (jobs/runs/watching.py):
    # its token, and when it last stepped. A step whose token is no longer this one ends; a chain that stopped
    # stepping is replaced by a new token (the sweep, or the next launch).
    observer_token = models.CharField(max_length=32, blank=True, editable=False)
    observed_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="host_name_unique_in_team")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, str] = {}
        try:
            self.address = addresses.check(self.address)
        except addresses.AddressError as exc:
            errors["address"] = str(exc)
        if self.credential_id and self.credential is not None and self.credential.team_id != self.team_id:
            errors["credential"] = "Choose a credential of this host's team."
        if problem := self.run_base_problem():
            errors["run_base_dir"] = problem
        if self.ndisk64_path:
            try:
                paths.check(self.ndisk64_path, field="ndisk64 path", command=True)
            except paths.PathError as exc:
                errors["ndisk64_path"] = str(exc)
        if errors:
            raise ValidationError(errors)

    def run_base_problem(self) -> str:
        """Why every run on this host would be refused for its run directory, with the fix; "" when usable.
        The launch applies the same check (jobs/remote/) to a value stored before the rule was this strict."""
        if not self.run_base_dir:
            return ""  # the default, ~/.benchweb/runs
        try:
            paths.check(self.run_base_dir, field="run directory", home=True)
        except paths.PathError as exc:
            return str(exc)
        return ""

    @property
    def has_pinned_key(self) -> bool:
        return bool(self.host_key_b64 and self.host_key_fingerprint)

    def ssh_target(self) -> ssh.Target:
        """Where and as whom benchweb logs in: the approved host key and the credential's secret. The callers
        say first, in their own words, when no key is pinned or no credential chosen."""
        from jobs import ssh

        credential = self.credential
        if credential is None or not self.has_pinned_key:
            raise ValueError(f"host {self.name} has no credential or no approved host key")
        try:
            secret, passphrase = credential.reveal_secret(), credential.reveal_passphrase()
        except crypto.UndecryptableSecret as exc:
            raise ssh.SSHError(
                "bad_credential",
                f"The credential {credential.name} of host {self.name} cannot be decrypted with the server's keys: "
                "it was written with a key that is no longer among them. Nothing was sent to the host and the "
                "stored credential was kept as it is. Enter its secret again (the host's edit page: Add a new "
                "credential, or Admin → Credentials), or have an administrator restore the key it was written "
                "with (var/field_keys or BENCHWEB_FIELD_KEYS).",
            ) from exc
        is_key = credential.kind == credential.Kind.PRIVATE_KEY
        return ssh.Target(
            address=self.address,
            port=self.port,
            username=self.username,
            host_key=ssh.HostKey(self.host_key_type, self.host_key_b64, self.host_key_fingerprint),
            password=None if is_key else secret,
            private_key=secret if is_key else None,
            passphrase=passphrase or None,
        )
