"""What the API reads and writes. Validation is the models' and the domain modules' own; serializers only
translate their errors into field-level messages."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import Model, Q, QuerySet
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.utils import html

from audit import log as audit
from audit.models import AuditEvent
from jobs import dispatcher, limits, paths, scheduling, ssh, teams
from jobs.api.auth import access
from jobs.api.models import ApiToken
from jobs.manage_forms import MAX_IMPORT_CHARS, MAX_IMPORT_FILES, normalise_newlines
from jobs.models import Credential, Disk, Host, Membership, Profile, Run, RunSample, Schedule, ScheduleProfile, Team
from jobs.tools.options import EXTRA_OPTIONS, IOENGINES

PLACEHOLDER = "••••"


def _team(serializer: serializers.Field | serializers.Serializer) -> Team:
    return access(serializer.context["request"]).team


def _path(value: str, *, field: str, home: bool = False, command: bool = False) -> str:
    try:
        return paths.check(value, field=field, home=home, command=command)
    except paths.PathError as exc:
        raise serializers.ValidationError(str(exc)) from exc


def django_errors(exc: DjangoValidationError) -> serializers.ValidationError:
    if hasattr(exc, "error_dict"):
        return serializers.ValidationError(
            {k: [str(m) for e in v for m in e.messages] for k, v in exc.error_dict.items()}
        )
    return serializers.ValidationError({"non_field_errors": exc.messages})


def _taken(queryset: QuerySet, instance: Model | None, **lookup: Any) -> bool:
    return queryset.filter(**lookup).exclude(pk=instance.pk if instance else None).exists()


# A field's class, the JSON values it takes, and how to ask for them. An integer may come as 5.0 (JSON Schema
# calls that an integer too), never as "5"; a string never as a number; a boolean only as true or false.
_JSON_TYPES: tuple[tuple[type[serializers.Field], Callable[[Any], bool], str], ...] = (
    (serializers.BooleanField, lambda v: isinstance(v, bool), "true or false"),
    (
        serializers.IntegerField,
        lambda v: not isinstance(v, bool) and (isinstance(v, int) or (isinstance(v, float) and v.is_integer())),
        "a whole number",
    ),
    (serializers.CharField, lambda v: isinstance(v, str), "a string"),
)


class JsonTypes:
    """JSON bodies keep the types the schema gives: DRF alone reads "yes" as true, "5" as 5 and 5 as "5", so a
    request the schema calls wrong would be accepted. A form can only send text and keeps DRF's reading."""

    fields: dict[str, serializers.Field]

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict) and not html.is_html_input(data):
            errors = {
                name: [f"Give {words}, not {json.dumps(data[name])[:40]}."]
                for name, field in self.fields.items()
                if name in data and data[name] is not None and not field.read_only
                for field_class, fits, words in _JSON_TYPES
                if isinstance(field, field_class) and not fits(data[name])
            }
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)  # type: ignore[misc]


class ModelSerializer(JsonTypes, serializers.ModelSerializer):
    pass


class TeamScoped(serializers.PrimaryKeyRelatedField):
    """An id of one of the caller's team's objects; another team's id reads as 'does not exist'."""

    def __init__(self, *, presets: bool = False, **kwargs: Any) -> None:
        self.presets = presets
        super().__init__(**kwargs)

    def get_queryset(self) -> QuerySet:
        queryset = super().get_queryset()
        request = self.context.get("request")
        found = access(request) if request else None
        if found is None:
            return queryset.none()
        if self.presets:
            return queryset.filter(Q(team=found.team) | Q(team__isnull=True))
        return queryset.filter(team=found.team)


# ----------------------------------------------------------------------------------------- tokens


class TokenSerializer(ModelSerializer):
    active = serializers.BooleanField(source="is_active", read_only=True)

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created_at", "last_used_at", "expires_at", "revoked_at", "active"]
        read_only_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]

    def validate_expires_at(self, value: Any) -> Any:
        if value is not None and value <= timezone.now():
            raise serializers.ValidationError("This is in the past: give a future date-time, or leave it empty.")
        return value


class NewTokenSerializer(TokenSerializer):
    token = serializers.CharField(read_only=True, help_text="The whole token. It is shown this once only.")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]


# ----------------------------------------------------------------------------------------- hosts


class HostSerializer(ModelSerializer):
    credential = TeamScoped(
        queryset=Credential.objects.all(),
        required=False,
        allow_null=True,
        help_text="A stored credential of the team; or give password / private_key for a new one.",
    )
    password = serializers.CharField(write_only=True, required=False, trim_whitespace=False, max_length=4096)
    private_key = serializers.CharField(write_only=True, required=False, trim_whitespace=False, max_length=65536)
    passphrase = serializers.CharField(write_only=True, required=False, trim_whitespace=False, max_length=4096)
    has_credential = serializers.SerializerMethodField()
    credential_kind = serializers.SerializerMethodField()
    secret = serializers.SerializerMethodField(help_text=f"'{PLACEHOLDER}' when a secret is stored; never the secret.")

    class Meta:
        model = Host
        fields = [
            "id", "name", "address", "port", "username", "site", "os", "enabled", "exclusive", "run_base_dir",
            "ndisk64_path", "credential", "has_credential", "credential_kind", "secret", "password", "private_key",
            "passphrase", "host_key_type", "host_key_fingerprint", "host_key_approved_at", "scanned_key_type",
            "scanned_key_fingerprint", "scanned_at", "created_at",
        ]  # fmt: skip
        read_only_fields = ["host_key_type", "host_key_fingerprint", "host_key_approved_at", "created_at"]

    def get_has_credential(self, host: Host) -> bool:
        return host.credential_id is not None

    @extend_schema_field(serializers.ChoiceField(choices=Credential.Kind.choices, allow_null=True))
    def get_credential_kind(self, host: Host) -> str | None:
        return host.credential.kind if host.credential_id else None

    def get_secret(self, host: Host) -> str:
        return PLACEHOLDER if host.credential_id else ""

    def validate_name(self, name: str) -> str:
        if _taken(Host.objects.filter(team=_team(self)), self.instance, name=name):
            raise serializers.ValidationError(f"Your team already has a host named {name!r}; choose another name.")
        return name

    def validate_run_base_dir(self, base: str) -> str:
        return _path(base, field="run directory", home=True) if base else base

    def validate_ndisk64_path(self, path: str) -> str:
        return _path(path, field="ndisk64 path", command=True) if path else path

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        password, key, passphrase = (attrs.get(name) for name in ("password", "private_key", "passphrase"))
        if password and key:
            raise serializers.ValidationError({"password": "Give a password or a private key, not both."})
        if (password or key) and attrs.get("credential"):
            raise serializers.ValidationError({"credential": "Choose a stored credential or give a new secret."})
        if passphrase and not key:
            raise serializers.ValidationError({"passphrase": "A passphrase only applies to a private key."})
        if key:
            try:
                ssh.load_private_key(key, passphrase or None)
            except ssh.SSHError as exc:
                field = "passphrase" if "passphrase" in str(exc) else "private_key"
                raise serializers.ValidationError({field: f"{exc} Paste it again: secrets are never shown."}) from exc
        return attrs

    @transaction.atomic
    def save(self, **kwargs: Any) -> Host:
        data = self.validated_data
        password, key, passphrase = (data.pop(name, "") for name in ("password", "private_key", "passphrase"))
        before = self.instance.credential_id if self.instance else None
        host = super().save(team=_team(self), **kwargs)
        if password or key:
            host.credential = self._new_credential(host, password, key, passphrase)
            host.save(update_fields=["credential"])
        if before is not None and host.credential_id != before:
            # As the host page records it: which credential the host logs in with now (never its secret).
            audit.record(host.team, self._user, AuditEvent.Action.HOST_CREDENTIAL_CHANGED, host,
                         credential=str(host.credential) if host.credential else None, via="api")  # fmt: skip
        return host

    @property
    def _user(self) -> Any:
        return self.context["request"].user

    def _new_credential(self, host: Host, password: str, key: str, passphrase: str) -> Credential:
        kind = Credential.Kind.PRIVATE_KEY if key else Credential.Kind.PASSWORD
        current = host.credential
        if current is not None and not current.hosts.exclude(pk=host.pk).exists():
            # The host's own credential: replace its secret rather than leave an orphan behind.
            credential, action = current, AuditEvent.Action.CREDENTIAL_CHANGED
            # Which parts were replaced, by name: a passphrase given, or an old one dropped with the old key.
            replaced = ["secret", "passphrase"] if passphrase or current.passphrase_token else ["secret"]
            details = {"kind_from": current.kind, "replaced": replaced}
            credential.kind = kind
        else:
            names = set(Credential.objects.filter(team=host.team).values_list("name", flat=True))
            name, number = f"{host.name} login"[:90], 1
            while name in names:
                number += 1
                name = f"{host.name[:80]} login {number}"
            credential = Credential(team=host.team, name=name, kind=kind)
            action, details = AuditEvent.Action.CREDENTIAL_CREATED, {}
        credential.set_secret(key or password, passphrase)
        credential.save()
        audit.record(host.team, self._user, action, credential, kind=kind, host=host.name, via="api", **details)
        return credential


class ApproveKeySerializer(JsonTypes, serializers.Serializer):
    fingerprint = serializers.CharField(help_text="The SHA256 fingerprint you compared with the host's own.")


class ScannedKeySerializer(serializers.Serializer):
    key_type = serializers.CharField()
    fingerprint = serializers.CharField()
    matches_approved = serializers.BooleanField(allow_null=True, help_text="null: no key approved yet.")
    message = serializers.CharField()


class ConnectionTestSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    message = serializers.CharField()
    output = serializers.CharField(allow_blank=True)


# ----------------------------------------------------------------------------------------- disks


class DiskSerializer(ModelSerializer):
    host = TeamScoped(queryset=Host.objects.all())
    confirm_destructive = serializers.BooleanField(
        write_only=True,
        required=False,
        default=False,
        help_text="Needed to allow write profiles on a block device: they destroy every byte on it.",
    )
    limits = serializers.SerializerMethodField(help_text="Theoretical limits from the disk's spec (null: see error).")
    limits_error = serializers.SerializerMethodField()

    class Meta:
        model = Disk
        fields = [
            "id", "host", "label", "target_path", "kind", "disk_type", "size", "stripes", "spec_iops",
            "spec_bytes_per_s", "spec_burst_iops", "spec_burst_bytes_per_s", "instance_iops_cap",
            "instance_bytes_per_s_cap", "allow_destructive", "confirm_destructive", "limits", "limits_error",
            "identity", "identity_recorded_at", "identity_note", "created_at",
        ]  # fmt: skip
        read_only_fields = ["identity", "identity_recorded_at", "identity_note"]

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_limits(self, disk: Disk) -> dict[str, Any] | None:
        try:
            return disk.limits().as_dict()
        except limits.SpecError:
            return None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_limits_error(self, disk: Disk) -> str | None:
        try:
            disk.limits()
        except limits.SpecError as exc:
            return str(exc)
        return None

    def validate_target_path(self, target_path: str) -> str:
        return _path(target_path, field="target path")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        confirmed = attrs.pop("confirm_destructive", False)
        was = self.instance
        fields = {
            f: attrs.get(f, getattr(was, f) if was else None) for f in ("kind", "target_path", "allow_destructive")
        }
        confirmed_before = (
            was is not None
            and was.allow_destructive
            and was.kind == Disk.Kind.BLOCK
            and was.target_path == fields["target_path"]
        )
        if fields["kind"] == Disk.Kind.BLOCK and fields["allow_destructive"] and not (confirmed or confirmed_before):
            raise serializers.ValidationError(
                {
                    "confirm_destructive": f"Write profiles on {fields['target_path']} destroy everything on it: send "
                    "confirm_destructive=true, or allow_destructive=false."
                }
            )
        draft = Disk(**{f.attname: getattr(was, f.attname) for f in Disk._meta.concrete_fields} if was else {})
        for name, value in attrs.items():
            setattr(draft, name, value)
        try:
            draft.clean()
        except DjangoValidationError as exc:
            raise django_errors(exc) from exc
        return attrs


class DiskTypeRecordSerializer(serializers.Serializer):
    id = serializers.CharField()
    effective_from = serializers.DateField(allow_null=True)
    effective_until = serializers.DateField(allow_null=True)
    size_unit = serializers.CharField(allow_null=True)
    size_min = serializers.FloatField(allow_null=True)
    size_max = serializers.FloatField(allow_null=True)
    source = serializers.DictField()
    notes = serializers.CharField(allow_blank=True)
    io_basis = serializers.CharField(allow_null=True)


class DiskTypeSerializer(serializers.Serializer):
    id = serializers.CharField()
    label = serializers.CharField()
    provider = serializers.CharField()
    size_unit = serializers.CharField(allow_null=True)
    size_min = serializers.FloatField(allow_null=True)
    size_max = serializers.FloatField(allow_null=True)
    size_required = serializers.BooleanField()
    inputs = serializers.DictField(child=serializers.CharField(), help_text="Spec field -> required | optional.")
    records = DiskTypeRecordSerializer(many=True)


# ----------------------------------------------------------------------------------------- profiles


@extend_schema_field(
    {
        "type": "object",
        "properties": {name: {"type": "string", "pattern": f"^(?:{value})$"} for name, value in EXTRA_OPTIONS.items()},
        "additionalProperties": False,
    }
)
class ExtraOptionsField(serializers.DictField):
    """The allow-list (jobs/tools/options.py) in the schema too, so a client learns it before being refused."""


class OptionValueField(serializers.CharField):
    """A fio option's value as the text that goes into the job file: the schema says string, so 1 is not "1"."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class ProfileSerializer(ModelSerializer):
    extra_options = ExtraOptionsField(
        child=OptionValueField(allow_blank=True),
        required=False,
        help_text="Allow-listed fio options; ndisk64 takes none.",
    )
    ioengine = serializers.ChoiceField(choices=sorted(IOENGINES), required=False, help_text="fio's I/O engine.")
    writes = serializers.BooleanField(read_only=True)
    expected_seconds = serializers.IntegerField(read_only=True)

    class Meta:
        model = Profile
        fields = [
            "id", "name", "description", "builtin", "tool", "rw", "pattern", "read_percent", "block_size_bytes",
            "iodepth", "jobs", "runtime_s", "ramp_time_s", "time_based", "direct", "size_bytes", "ioengine",
            "extra_options", "writes", "expected_seconds",
        ]  # fmt: skip
        read_only_fields = ["builtin"]

    def validate_name(self, name: str) -> str:
        mine_or_presets = Profile.objects.filter(Q(team=_team(self)) | Q(team__isnull=True))
        if _taken(mine_or_presets, self.instance, name=name):
            raise serializers.ValidationError(
                f"A profile named {name!r} exists already (yours or a preset); choose another name."
            )
        return name

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        draft = Profile(**{f.attname: getattr(self.instance, f.attname) for f in Profile._meta.concrete_fields}
                        if self.instance else {})  # fmt: skip
        for name, value in attrs.items():
            setattr(draft, name, value)
        if draft.tool == Profile.Tool.NDISK64 and "extra_options" not in attrs:
            draft.extra_options = attrs["extra_options"] = {}
        try:
            draft.clean()
        except DjangoValidationError as exc:
            raise django_errors(exc) from exc
        return attrs

    def save(self, **kwargs: Any) -> Profile:
        return super().save(team=_team(self), **kwargs)


# ----------------------------------------------------------------------------------------- schedules


class OrderedProfiles(serializers.ListField):
    def get_attribute(self, schedule: Schedule) -> list[Any]:
        # Prefetched, in position order: no query per schedule. Only ids are shown, so no profile rows either.
        return [Profile(pk=sp.profile_id) for sp in schedule.scheduleprofile_set.all()]


class ScheduleSerializer(ModelSerializer):
    targets = TeamScoped(queryset=Disk.objects.all(), many=True, help_text="Disk ids.")
    profiles = OrderedProfiles(
        child=TeamScoped(queryset=Profile.objects.all(), presets=True),
        min_length=1,
        max_length=4,
        help_text="Profile ids (yours or presets), run one after another on each target, in this order.",
    )
    blackouts = serializers.ListField(
        child=serializers.CharField(max_length=20),
        required=False,
        help_text='Daily local ranges, e.g. ["08:00-18:00"].',
    )

    class Meta:
        model = Schedule
        fields = [
            "id", "name", "kind", "cron", "interval_minutes", "starts_at", "timezone", "window_start", "window_end",
            "stagger_s", "auto_stagger", "auto_stagger_by_site", "blackouts", "misfire_grace_s", "enabled",
            "targets", "profiles", "next_fire_at", "last_fire_at", "created_at",
        ]  # fmt: skip
        read_only_fields = ["next_fire_at", "last_fire_at", "created_at"]

    def validate_name(self, name: str) -> str:
        if _taken(Schedule.objects.filter(team=_team(self)), self.instance, name=name):
            raise serializers.ValidationError(f"Your team already has a schedule named {name!r}; choose another.")
        return name

    def validate_profiles(self, profiles: list[Profile]) -> list[Profile]:
        if len({p.pk for p in profiles}) != len(profiles):
            raise serializers.ValidationError("Each profile can appear once in a schedule; remove the repeat.")
        return profiles

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        was = self.instance
        draft = Schedule(**{f.attname: getattr(was, f.attname) for f in Schedule._meta.concrete_fields} if was else {})
        for name, value in attrs.items():
            if name not in ("targets", "profiles"):
                setattr(draft, name, value)
        try:
            draft.clean()
        except DjangoValidationError as exc:
            raise django_errors(exc) from exc
        targets = attrs.get("targets", list(was.targets.all()) if was else [])
        profiles = attrs.get("profiles", [sp.profile for sp in was.scheduleprofile_set.all()] if was else [])
        stagger = 0 if draft.auto_stagger else draft.stagger_s or 0
        errors = scheduling.validate(
            draft.rule(), stagger_s=stagger, n_targets=len(targets), sequence_s=dispatcher.sequence_seconds(profiles)
        )
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    @transaction.atomic
    def save(self, **kwargs: Any) -> Schedule:
        profiles = self.validated_data.pop("profiles", None)
        schedule = super().save(team=_team(self), **kwargs)
        if profiles is not None:
            schedule.scheduleprofile_set.all().delete()
            ScheduleProfile.objects.bulk_create(
                ScheduleProfile(schedule=schedule, profile=profile, position=position)
                for position, profile in enumerate(profiles)
            )
        return Schedule.objects.prefetch_related("targets", "scheduleprofile_set").get(pk=schedule.pk)


class PlannedRunSerializer(serializers.Serializer):
    disk = serializers.IntegerField()
    profile = serializers.IntegerField()
    offset_s = serializers.FloatField()
    start = serializers.DateTimeField()


class FireSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    runs = PlannedRunSerializer(many=True)


class NextFiresSerializer(serializers.Serializer):
    fires = FireSerializer(many=True)


# ----------------------------------------------------------------------------------------- runs


class RunSerializer(serializers.ModelSerializer):
    host = serializers.IntegerField(source="disk.host_id", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    final = serializers.BooleanField(source="is_final", read_only=True)

    class Meta:
        model = Run
        fields = [
            "id", "uuid", "disk", "host", "profile", "profile_name", "schedule", "fire_time", "trigger", "state",
            "final", "explanation", "created_by", "created_at", "not_before", "queued_at", "started_at",
            "finished_at", "progress", "destructive", "warnings",
        ]  # fmt: skip
        read_only_fields = fields


# The runs list reads these columns as plain values (no model instances, no joined rows) and builds each
# item with run_list_item: a page of 50 then costs ~1/8 of what RunSerializer's field machinery did, which
# was most of a list request's CPU time (bench/api_runs_list.py). RunSerializer stays the list's schema; a
# test holds the two to the same output.
RUN_LIST_COLUMNS = {
    "id": "id", "uuid": "uuid", "disk": "disk_id", "host": "disk__host_id", "profile": "profile_id",
    "profile_name": "profile_name", "schedule": "schedule_id", "fire_time": "fire_time", "trigger": "trigger",
    "state": "state", "explanation": "explanation", "created_by": "created_by__username",
    "created_at": "created_at", "not_before": "not_before", "queued_at": "queued_at", "started_at": "started_at",
    "finished_at": "finished_at", "progress": "progress", "destructive": "destructive", "warnings": "warnings",
}  # fmt: skip
_RUN_LIST_TIMES = ("fire_time", "created_at", "not_before", "queued_at", "started_at", "finished_at")


def run_list_item(row: dict[str, Any]) -> dict[str, Any]:
    """One row of RUN_LIST_COLUMNS values as RunSerializer renders it (field order, ISO times, 'Z' for UTC)."""
    zone = timezone.get_current_timezone()
    item: dict[str, Any] = {}
    for name in RunSerializer.Meta.fields:
        if name == "final":
            item[name] = row["state"] in Run.FINAL_STATES
            continue
        value = row[RUN_LIST_COLUMNS[name]]
        if name == "uuid":
            value = str(value)
        elif name in _RUN_LIST_TIMES and value is not None:
            value = value.astimezone(zone).isoformat()
            value = value[:-6] + "Z" if value.endswith("+00:00") else value
        item[name] = value
    return item


class RunDetailSerializer(RunSerializer):
    progress = serializers.JSONField(
        source="live_progress", read_only=True, help_text="The last poll's progress, elapsed_s and eta_s as of now."
    )

    class Meta(RunSerializer.Meta):
        fields = [
            *RunSerializer.Meta.fields, "parameters", "summary", "limits_snapshot", "command", "exit_status",
            "cancel_requested",
        ]  # fmt: skip
        read_only_fields = fields


class RunRequestSerializer(serializers.Serializer):
    disk = TeamScoped(queryset=Disk.objects.select_related("host"))
    profile = TeamScoped(queryset=Profile.objects.all(), presets=True)


class RunSampleSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunSample
        fields = ["t_s", "read_iops", "write_iops"]


# ----------------------------------------------------------------------------------------- import


class ImportSerializer(JsonTypes, serializers.Serializer):
    disk = TeamScoped(queryset=Disk.objects.select_related("host"))
    tool = serializers.ChoiceField(choices=["auto", "fio", "ndisk64"], default="auto")
    finished_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text="When the run ended; empty: now."
    )
    text = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False, help_text="Pasted output.")
    name = serializers.CharField(required=False, max_length=200, default="pasted text", help_text="Names the text.")
    files = serializers.ListField(
        child=serializers.FileField(), required=False, max_length=MAX_IMPORT_FILES, help_text="Each file is one result."
    )
    dry_run = serializers.BooleanField(default=False, help_text="Parse and show the numbers; store nothing.")

    def validate_finished_at(self, value: Any) -> Any:
        if value and value > timezone.now():
            raise serializers.ValidationError("This is in the future: give when the run finished, or leave it empty.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        text, files = attrs.get("text") or "", attrs.get("files") or []
        sources = [(attrs["name"], text)] if text.strip() else []
        for upload in files:
            try:
                sources.append((upload.name[:200], upload.read(MAX_IMPORT_CHARS * 4 + 1).decode("utf-8")))
            except UnicodeDecodeError as exc:
                raise serializers.ValidationError({"files": f"{upload.name} is not UTF-8 text."}) from exc
        if not sources:
            raise serializers.ValidationError({"text": "Give the tool's output as text, or upload files."})
        total = sum(len(body) for _, body in sources)
        if total > MAX_IMPORT_CHARS:
            raise serializers.ValidationError(
                {
                    "files" if files else "text": f"That is {total:,} characters; import up to {MAX_IMPORT_CHARS:,} at "
                    "a time, or large outputs with `manage.py import_results FILE --disk ID`."
                }
            )
        attrs["sources"] = [(name, normalise_newlines(body)) for name, body in sources]
        return attrs


class ParsedSerializer(serializers.Serializer):
    name = serializers.CharField()
    format = serializers.CharField()
    summary = serializers.DictField()
    job_errors = serializers.ListField(child=serializers.DictField())


class ImportResultSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    parsed = ParsedSerializer(many=True)
    runs = RunSerializer(many=True)


# ----------------------------------------------------------------------------------------- teams


class TeamSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField()
    current = serializers.SerializerMethodField()

    class Meta:
        model = Team
        fields = ["id", "name", "role", "current", "created_at"]

    @extend_schema_field(serializers.ChoiceField(choices=Membership.Role.choices))
    def get_role(self, team: Team) -> str:
        return team.my_role

    def get_current(self, team: Team) -> bool:
        return team.pk == _team(self).pk


class MemberSerializer(ModelSerializer):
    user_id = serializers.IntegerField(read_only=True)
    username = serializers.CharField(source="user.username", read_only=True)
    # A CharField, not an EmailField: an account may have no email, and "" is no email address (format: email).
    email = serializers.CharField(source="user.email", read_only=True, help_text='The address, or "" if none.')

    class Meta:
        model = Membership
        fields = ["id", "user_id", "username", "email", "role", "created_at"]
        read_only_fields = ["created_at"]

    def validate_role(self, role: str) -> str:
        membership = self.instance
        if membership and membership.role == Membership.Role.OWNER and role != Membership.Role.OWNER:
            last_owner_guard(membership)
        return role

    def save(self, **kwargs: Any) -> Membership:
        return super().save(team=_team(self), **kwargs)


class InviteSerializer(serializers.Serializer):
    """POST /members/: an invitation, not a membership; the person joins when they accept it."""

    user = serializers.CharField(max_length=254, help_text="Username or email address of the person to invite.")
    role = serializers.ChoiceField(choices=Membership.Role.choices, default=Membership.Role.MEMBER)


class InvitedSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="The same words whether or not an account answers to `user`.")
    invited = serializers.CharField(source="invited_as")
    role = serializers.ChoiceField(choices=Membership.Role.choices)
    expires_at = serializers.DateTimeField()


LAST_OWNER = teams.LAST_OWNER


def last_owner_guard(membership: Membership) -> None:
    try:
        teams.last_owner_guard(membership)
    except teams.MembershipRefused as exc:
        raise serializers.ValidationError(str(exc)) from exc
