"""The API's profiles."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Q, QuerySet
from drf_spectacular.utils import extend_schema_field
from rest_framework import permissions, serializers, viewsets
from rest_framework.exceptions import PermissionDenied

from jobs.api.base import ModelSerializer, TeamViewSet, team_of
from jobs.api.errors import django_errors
from jobs.models import Profile
from jobs.models.names import name_taken
from jobs.tools import sweep_plan
from jobs.tools.options import EXTRA_OPTIONS, IOENGINES


@extend_schema_field(
    {
        "type": "object",
        "properties": {name: {"type": "string", "pattern": f"^(?:{value})$"} for name, value in EXTRA_OPTIONS.items()},
        "additionalProperties": False,
    }
)
class ExtraOptionsField(serializers.DictField):
    """The allow-list (jobs/tools/options.py) in the schema too, so a client learns it before being refused."""


@extend_schema_field(
    {
        "type": "object",
        "properties": {field: {"type": "string", "minLength": 1} for field in sweep_plan.KINDS},
        "additionalProperties": False,
        "maxProperties": sweep_plan.MAX_AXES,
    }
)
class SweepAxesField(serializers.DictField):
    """The axes a sweep varies, each field's values as text, in the order they nest (the first outer)."""


class SweepPlanSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="How many points (runs) the sweep makes.")
    seconds_per_point = serializers.IntegerField(help_text="Ramp plus runtime of one point.")
    total_s = serializers.IntegerField(help_text="All the points' time together.")
    text = serializers.CharField(help_text="'9 points × (5 s ramp + 1 min) = 9 min 45 s'.")


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
    sweep_axes = SweepAxesField(
        child=OptionValueField(),
        required=False,
        help_text="A sweep: the fields it varies (iodepth, jobs, block_size_bytes, read_percent; one or two), each "
        "as a list (1,4,16 or 4k,64k) or a range (1-256 x2, 10-90 +20), the first axis outer. {} (the default): one "
        "run. A sweep is started with POST /api/v1/sets/.",
    )
    sweep_plan = serializers.SerializerMethodField(
        help_text="A sweep's points and time (points x (ramp + runtime)); null for a profile that is not a sweep."
    )

    class Meta:
        model = Profile
        fields = [
            "id", "name", "description", "builtin", "tool", "rw", "pattern", "read_percent", "block_size_bytes",
            "iodepth", "jobs", "runtime_s", "ramp_time_s", "time_based", "direct", "size_bytes", "ioengine",
            "extra_options", "ss_metric", "ss_limit", "ss_dur_s", "ss_ramp_s", "precondition", "precondition_passes",
            "pin_queue_cpus", "sweep_axes", "sweep_on_failure", "sweep_plan", "sla_percentile", "sla_target_us",
            "sla_max_runs", "sla_lowest_iops", "writes", "expected_seconds",
        ]  # fmt: skip
        read_only_fields = ["builtin"]
        extra_kwargs = {
            "precondition": {
                "help_text": '"fill": write the whole target (a block device, or the run\'s test files) sequentially '
                "precondition_passes times before the measured job; it counts as a write, so on a block device it "
                'needs the disk\'s allow_destructive. "": measure the target as it is.'
            }
        }

    @extend_schema_field(SweepPlanSerializer(allow_null=True))
    def get_sweep_plan(self, profile: Profile) -> dict[str, Any] | None:
        if not profile.is_sweep:
            return None
        try:
            plan = profile.sweep()
        except sweep_plan.SweepError:
            return None
        return {"count": plan.count, "seconds_per_point": plan.seconds_per_point, "total_s": plan.total_s,
                "text": sweep_plan.plan_text(plan)}  # fmt: skip

    def validate_name(self, name: str) -> str:
        mine_or_presets = Profile.objects.filter(Q(team=team_of(self)) | Q(team__isnull=True))
        if name_taken(mine_or_presets, self.instance, name=name):
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
        return super().save(team=team_of(self), **kwargs)


class ProfileViewSet(viewsets.ModelViewSet, TeamViewSet):
    """Built-in presets (read-only, shared by every team) and the team's own profiles."""

    serializer_class = ProfileSerializer
    http_method_names = ["get", "post", "patch", "put", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Profile.objects.none()
        return Profile.objects.filter(Q(team=self.team) | Q(team__isnull=True))

    def get_object(self) -> Profile:
        profile = super().get_object()
        if profile.builtin and self.request.method not in permissions.SAFE_METHODS:
            raise PermissionDenied("Built-in presets are read-only: create a profile of your own to change one.")
        return profile
