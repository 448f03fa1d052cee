"""Forms of the management pages: hosts with an inline credential, disks with their spec, profiles, imports."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Model, Q, QuerySet
from django.utils import timezone

from audit import log as audit
from audit.models import AuditEvent
from jobs import limits, ssh
from jobs.models import Credential, Disk, Host, Profile, Team
from jobs.tools import options

THROUGHPUT_UNITS = {"MB/s": 10**6, "MiB/s": 2**20}
THROUGHPUT_FIELDS = ("spec_bytes_per_s", "spec_burst_bytes_per_s", "instance_bytes_per_s_cap")
# Pasted or uploaded output travels back to the browser for confirmation, and Django refuses form bodies
# above DATA_UPLOAD_MAX_MEMORY_SIZE (16 MiB, benchweb/settings.py); larger outputs go through `import_results`.
MAX_IMPORT_CHARS = 2_000_000
MAX_IMPORT_FILES = 20


def _name_taken(queryset: QuerySet, instance: Model, **lookup: Any) -> bool:
    # The unique constraints include a field the form does not show (team, host), so Django skips them.
    return queryset.filter(**lookup).exclude(pk=instance.pk).exists()


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
            "credential",
        ]
        labels = {
            "os": "Operating system",
            "run_base_dir": "Run directory",
            "ndisk64_path": "ndisk64 path",
            "username": "User name",
            "exclusive": "One run at a time on this host",
            "credential": "Stored credential",
        }
        help_texts = {
            "site": "Names the worker queue of workers near the host, e.g. eu-west. Empty: the default queue.",
            "enabled": "Untick to disable the host: no run starts on it until it is enabled again.",
        }

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.team = team
        self.instance.team = team
        self._initial_credential_id = self.instance.credential_id
        stored = Credential.objects.filter(team=team)
        self.fields["credential"].queryset = stored
        self.fields["credential"].empty_label = "— choose —"
        if self.instance.pk:
            mode = "existing" if self.instance.credential_id else "none"
        else:
            mode = "existing" if stored.exists() else "new"
        self.fields["credential_mode"].initial = mode

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if _name_taken(Host.objects.filter(team=self.team), self.instance, name=name):
            raise ValidationError(f"Your team already has a host named {name!r}; choose another name.")
        return name

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
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


def _disk_type_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    groups: dict[str, list[tuple[str, str]]] = {}
    for kind in limits.disk_types():
        groups.setdefault(kind.provider, []).append((kind.id, f"{kind.label} — {size_range(kind)}"))
    return list(groups.items())


def size_range(kind: limits.DiskType) -> str:
    if not kind.size_unit:
        return "no size"
    low = f"{kind.size_min:,g}" if kind.size_min is not None else "any"
    high = f"{kind.size_max:,g}" if kind.size_max is not None else "any"
    return f"{low} to {high} {kind.size_unit}"


class DiskForm(forms.ModelForm):
    """A disk's target and spec. Throughput is typed in MB/s or MiB/s and stored in bytes per second."""

    disk_type = forms.ChoiceField(label="Disk type", choices=_disk_type_choices)
    throughput_unit = forms.ChoiceField(
        label="Throughput unit",
        choices=[("MB/s", "MB/s (10⁶ bytes)"), ("MiB/s", "MiB/s (2²⁰ bytes)")],
        help_text="For every throughput on this form. Vendors differ: AWS quotes MiB/s, Alibaba MB/s.",
    )
    spec_bytes_per_s = forms.DecimalField(label="Throughput", required=False, min_value=0, decimal_places=3)
    spec_burst_bytes_per_s = forms.DecimalField(label="Burst throughput", required=False, min_value=0, decimal_places=3)
    instance_bytes_per_s_cap = forms.DecimalField(
        label="Instance throughput cap", required=False, min_value=0, decimal_places=3
    )
    confirm_destructive = forms.BooleanField(
        label="I understand that benchmarks will overwrite this device and destroy every byte on it", required=False
    )

    class Meta:
        model = Disk
        fields = [
            "label",
            "target_path",
            "kind",
            "disk_type",
            "size",
            "stripes",
            "spec_iops",
            "spec_bytes_per_s",
            "spec_burst_iops",
            "spec_burst_bytes_per_s",
            "instance_iops_cap",
            "instance_bytes_per_s_cap",
            "allow_destructive",
        ]
        labels = {
            "target_path": "Target path",
            "spec_iops": "IOPS",
            "spec_burst_iops": "Burst IOPS",
            "instance_iops_cap": "Instance IOPS cap",
            "allow_destructive": "Allow write profiles on this target",
        }
        help_texts = {
            "target_path": "A directory (benchweb writes test files in it) or a block device such as /dev/nvme1n1.",
            "size": "In the type's unit (see the type's range).",
            "spec_iops": "Provisioned IOPS for gp3, io1/io2, SolidFire…; the limit itself for custom.",
            "instance_iops_cap": "The VM's own limit, when it is lower than the disks'. Empty: none.",
            "allow_destructive": "Needed by write and mixed profiles; read profiles always run.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        stored = [getattr(self.instance, name) for name in THROUGHPUT_FIELDS]
        mebi = any(stored) and all(value % 2**20 == 0 for value in stored if value)
        unit = "MiB/s" if mebi else "MB/s"
        self.fields["throughput_unit"].initial = unit
        for name, value in zip(THROUGHPUT_FIELDS, stored, strict=True):
            if value is not None:
                self.initial[name] = Decimal(value) / THROUGHPUT_UNITS[unit]

    def clean_label(self) -> str:
        label = self.cleaned_data["label"]
        if self.instance.host_id and _name_taken(
            Disk.objects.filter(host_id=self.instance.host_id), self.instance, label=label
        ):
            raise ValidationError(f"This host already has a disk labelled {label!r}; choose another label.")
        return label

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        factor = THROUGHPUT_UNITS.get(cleaned.get("throughput_unit") or "", 10**6)
        for name in THROUGHPUT_FIELDS:
            if cleaned.get(name) is not None:
                cleaned[name] = round(cleaned[name] * factor)
        block, allow = cleaned.get("kind") == Disk.Kind.BLOCK, cleaned.get("allow_destructive")
        was = self.instance
        confirmed_before = (
            was.pk
            and was.allow_destructive
            and was.kind == Disk.Kind.BLOCK
            and was.target_path == cleaned.get("target_path")
        )
        if block and allow and not confirmed_before and not cleaned.get("confirm_destructive"):
            self.add_error(
                "confirm_destructive",
                f"Write profiles on {cleaned.get('target_path') or 'a block device'} destroy everything on it: tick "
                "this box to confirm, or untick “Allow write profiles”.",
            )
        return cleaned


def short_size(value: int) -> str:
    """4096 -> 4k, 268435456 -> 256M: the way fio and ndisk64 users write sizes (1024-based)."""
    for suffix, factor in (("T", 2**40), ("G", 2**30), ("M", 2**20), ("k", 2**10)):
        if value and value % factor == 0:
            return f"{value // factor}{suffix}"
    return str(value)


class SizeField(forms.CharField):
    """A byte count typed as 4096, 4k, 64KiB, 256M or 4G (1024-based)."""

    FACTORS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    PATTERN = re.compile(r"([0-9]+)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)

    def prepare_value(self, value: Any) -> Any:
        return short_size(value) if isinstance(value, int) else value

    def to_python(self, value: Any) -> int | None:
        text = super().to_python(value).strip()
        if not text:
            return None
        match = self.PATTERN.fullmatch(text)
        if not match:
            raise ValidationError(f"Give a byte count such as 4096, 4k, 64k, 256M or 4G, not {text!r}.")
        return int(match[1]) * self.FACTORS[match[2].lower()]


class ProfileForm(forms.ModelForm):
    block_size_bytes = SizeField(label="Block size", help_text="Bytes, or with k, M, G (1024-based): 4k, 64k, 1M.")
    size_bytes = SizeField(
        label="File size per job",
        required=False,
        help_text="fio size / ndisk64 -s, e.g. 4G. Needed for a directory; empty on a device means all of it.",
    )
    ioengine = forms.ChoiceField(label="I/O engine", choices=[(name, name) for name in sorted(options.IOENGINES)])
    extra_options = forms.CharField(
        label="Extra fio options",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text="One per line, name=value, e.g. norandommap=1. Only allow-listed options: benchweb chooses files, "
        "logs and output itself.",
    )

    class Meta:
        model = Profile
        fields = [
            "name",
            "description",
            "tool",
            "rw",
            "pattern",
            "read_percent",
            "block_size_bytes",
            "iodepth",
            "jobs",
            "runtime_s",
            "ramp_time_s",
            "time_based",
            "direct",
            "size_bytes",
            "ioengine",
            "extra_options",
        ]
        labels = {
            "rw": "Access pattern (fio rw)",
            "pattern": "Access pattern (ndisk64)",
            "read_percent": "Reads (%)",
            "iodepth": "Queue depth (iodepth)",
            "jobs": "Jobs / processes",
            "runtime_s": "Runtime (seconds)",
            "ramp_time_s": "Ramp time (seconds)",
            "time_based": "Time based: run for the whole runtime",
            "direct": "Direct I/O (bypass the page cache)",
        }
        help_texts = {
            "read_percent": "For mixed fio patterns (rwmixread) and for ndisk64 -r.",
            "direct": "Without it the page cache can inflate results thirty times.",
        }
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.team = team
        self.instance.team = team
        if not self.is_bound:
            extras = self.instance.extra_options or {}
            self.initial["extra_options"] = "\n".join(f"{name}={value}" for name, value in extras.items())

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if _name_taken(Profile.objects.filter(Q(team=self.team) | Q(team__isnull=True)), self.instance, name=name):
            raise ValidationError(f"A profile named {name!r} exists already (yours or a preset); choose another name.")
        return name

    def clean_extra_options(self) -> dict[str, str]:
        if self.cleaned_data.get("tool") == Profile.Tool.NDISK64:
            return {}  # the field is fio's and hidden for ndisk64; what it still holds is not the user's intent
        text = self.cleaned_data.get("extra_options", "").strip()
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValidationError(
                    f"This JSON does not parse ({exc.msg}); or write one name=value per line."
                ) from exc
            if not isinstance(parsed, dict):
                raise ValidationError("Give one name=value per line, e.g. norandommap=1.")
            return parsed
        extras: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            name, sep, value = line.partition("=")
            if not sep or not name.strip():
                raise ValidationError(f"Line {number} ({line.strip()!r}) is not name=value; write e.g. norandommap=1.")
            extras[name.strip()] = value.strip()
        return extras


def copy_profile(source: Profile, team: Team) -> Profile:
    """A team's own editable copy of a preset or of one of its profiles, under a free name."""
    names = set(Profile.objects.filter(Q(team=team) | Q(team__isnull=True)).values_list("name", flat=True))
    number, name = 1, f"{source.name} (copy)"
    while name in names:
        number += 1
        name = f"{source.name} (copy {number})"
    fields = {f.name: getattr(source, f.name) for f in Profile._meta.concrete_fields if f.name not in {"id", "team"}}
    return Profile.objects.create(**(fields | {"name": name[:100], "team": team, "builtin": False}))


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        files = data if isinstance(data, list | tuple) else [data] if data else []
        return [super(MultipleFileField, self).clean(file, initial) for file in files]


def _not_future(moment: Any) -> Any:
    if moment and moment > timezone.now():
        raise ValidationError("This is in the future: give when the run finished, or leave it empty for now.")
    if moment and moment.year < 1970:  # services.import_result refuses it too; here it is shown on the field
        raise ValidationError("This is before 1970: give when the run finished, or leave it empty for now.")
    return moment


class ImportTargetForm(forms.Form):
    """What both import steps share: the disk, the date and the tool."""

    disk = forms.ModelChoiceField(queryset=Disk.objects.none(), empty_label="— choose a disk —")
    finished_at = forms.DateTimeField(
        label="Finished at",
        required=False,
        validators=[_not_future],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="When the run ended, in your time zone. Empty: now.",
    )
    tool = forms.ChoiceField(
        choices=[("auto", "Recognise it"), ("fio", "fio (JSON, text or terse)"), ("ndisk64", "ndisk64")],
        initial="auto",
    )

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["disk"].queryset = Disk.objects.filter(team=team).select_related("host")


class ImportForm(ImportTargetForm):
    files = MultipleFileField(
        label="Files", required=False, help_text=f"Up to {MAX_IMPORT_FILES} files; each becomes one result."
    )
    text = forms.CharField(
        label="Or paste the output",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
        help_text="fio JSON (--output-format=json), fio's text report, terse lines, or an ndisk64 report.",
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        files, text = cleaned.get("files") or [], cleaned.get("text") or ""
        if not files and not text.strip() and "files" not in self.errors:
            self.add_error("text", "Choose one or more files, or paste the tool's output here.")
        if len(files) > MAX_IMPORT_FILES:
            self.add_error("files", f"Choose at most {MAX_IMPORT_FILES} files at a time.")
        sources = [("pasted text", text)] if text.strip() else []
        for upload in files:
            raw = upload.read(MAX_IMPORT_CHARS * 4 + 1)
            try:
                sources.append((upload.name, raw.decode("utf-8")))
            except UnicodeDecodeError:
                self.add_error("files", f"{upload.name} is not text (UTF-8): upload the tool's output file itself.")
        total = sum(len(body) for _, body in sources)
        if total > MAX_IMPORT_CHARS:
            self.add_error(
                "files" if files else "text",
                f"That is {total:,} characters; the browser import takes up to {MAX_IMPORT_CHARS:,} at a time. "
                "Import fewer files at once, or large outputs with `manage.py import_results FILE --disk ID`.",
            )
        cleaned["sources"] = [(name, normalise_newlines(body)) for name, body in sources]
        return cleaned


def normalise_newlines(text: str) -> str:
    # Browsers send a textarea's line breaks as CRLF, so the confirmation step would otherwise store different
    # text from the one it showed.
    return text.replace("\r\n", "\n").replace("\r", "\n")
