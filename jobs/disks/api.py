"""The API's disks and disk types."""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from jobs import limits, timeseries
from jobs.api.base import ID_SCHEMA, ModelSerializer, TeamScoped, TeamViewSet, checked_path, parse_id
from jobs.api.errors import django_errors
from jobs.disks import identity, precondition
from jobs.models import Disk, Host
from jobs.results import burst, compliance, series, stability
from jobs.results.burst_serializers import DiskBurstSerializer
from jobs.results.compliance_serializers import PARAMETERS as COMPLIANCE_PARAMETERS
from jobs.results.compliance_serializers import DiskComplianceSerializer, DiskStabilitySerializer


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
    precondition_counts = serializers.SerializerMethodField(
        help_text="Whether the precondition record still counts: false when there is none, or when it predates the "
        "disk's recorded identity (another device may have been at the path). Runs on a block device without one "
        "carry a fresh-block warning."
    )

    class Meta:
        model = Disk
        fields = [
            "id", "host", "label", "target_path", "kind", "disk_type", "size", "stripes", "spec_iops",
            "spec_bytes_per_s", "spec_burst_iops", "spec_burst_bytes_per_s", "instance_iops_cap",
            "instance_bytes_per_s_cap", "throughput_unit", "allow_destructive", "confirm_destructive", "limits",
            "limits_error", "identity", "identity_recorded_at", "identity_note", "precondition",
            "precondition_counts", "created_at",
        ]  # fmt: skip
        read_only_fields = ["identity", "identity_recorded_at", "identity_note", "precondition"]
        extra_kwargs = {
            "allow_destructive": {
                "help_text": "Only block devices need it: write and mixed profiles overwrite the device, so they run "
                "only with this true. A directory needs no switch (writes go to benchweb's own test files)."
            }
        }

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_limits(self, disk: Disk) -> dict[str, Any] | None:
        """Limits.as_dict() (numbers in IOPS and bytes/s, as before), plus each throughput as the source publishes
        it (`throughput`, `burst_throughput`: value and unit) and `breakdown` (jobs/limits/breakdown.py)."""
        found, _ = disk.limits_or_reason()
        if found is None:
            return None
        unit = found.total_throughput_unit
        return found.as_dict() | {
            "throughput": limits.rate(found.throughput_bytes_per_s, unit),
            "burst_throughput": limits.rate(found.burst_throughput_bytes_per_s, unit),
            "breakdown": limits.breakdown(found),
        }

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_limits_error(self, disk: Disk) -> str | None:
        return disk.limits_or_reason()[1]

    @extend_schema_field(serializers.BooleanField())
    def get_precondition_counts(self, disk: Disk) -> bool:
        return precondition.valid_record(disk) is not None

    def validate_target_path(self, target_path: str) -> str:
        return checked_path(target_path, field="target path")

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


class PreconditionRecordSerializer(serializers.Serializer):
    at = serializers.DateTimeField(
        required=False, help_text="When the fill ended, ISO 8601 with its zone (default: now); not in the future."
    )
    how = serializers.CharField(max_length=300, help_text="How the disk was filled, e.g. dd if=/dev/zero bs=1M, twice.")


class DiskTypeRecordSerializer(serializers.Serializer):
    id = serializers.CharField()
    effective_from = serializers.DateField(allow_null=True)
    effective_until = serializers.DateField(allow_null=True)
    size_unit = serializers.CharField(allow_null=True)
    size_min = serializers.FloatField(allow_null=True)
    size_max = serializers.FloatField(allow_null=True)
    # The serializer's metaclass moves declared fields out of the class, so these do not shadow Field's attributes.
    source = serializers.DictField()  # type: ignore[assignment]
    notes = serializers.CharField(allow_blank=True)
    io_basis = serializers.CharField(allow_null=True)
    formula = serializers.ListField(
        child=serializers.CharField(), help_text="One volume's limits in words, in the source's own units."
    )


class DiskTypeSerializer(serializers.Serializer):
    id = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field, as `source` above
    provider = serializers.CharField()
    size_unit = serializers.CharField(allow_null=True)
    size_min = serializers.FloatField(allow_null=True)
    size_max = serializers.FloatField(allow_null=True)
    size_required = serializers.BooleanField()
    inputs = serializers.DictField(child=serializers.CharField(), help_text="Spec field -> required | optional.")
    records = DiskTypeRecordSerializer(many=True)


# An ISO date (a whole day) or date-time, as jobs.results.series reads it; a date is not a `format: date-time`.
_TIME = r"[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?"


ISO_MOMENT = {"type": "string", "pattern": rf"^[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}({_TIME})?$"}


SERIES_PARAMETERS = [
    OpenApiParameter(
        "range",
        str,
        enum=[*series.RANGES, "custom"],
        description="Default: the shortest of 24h, 7d, 30d and all that holds every run of the disk (of the profile "
        f"asked for) or at least {timeseries.ENOUGH_RUNS} of them; the answer's range.name says which, and "
        "range.fitted is true when it was chosen so.",
    ),
    OpenApiParameter("from", ISO_MOMENT, description="Only with range=custom: an ISO date or date-time."),
    OpenApiParameter("to", ISO_MOMENT, description="Only with range=custom: an ISO date or date-time."),
    OpenApiParameter("profile", str, description="A profile id or name."),
    OpenApiParameter(
        "steady",
        str,
        enum=["only", "all"],
        description="only: leave out runs not in steady state and runs not checked (each point's steady flag says "
        "which it is: true, false or null). Default: all.",
    ),
    OpenApiParameter(
        "points",
        {"type": "integer", "minimum": 10, "maximum": timeseries.MAX_POINTS},
        description="Most points per series (downsampled on the server).",
    ),
]


def _custom_range_only(request: Request) -> None:
    """`from` and `to` mean something only with range=custom (elsewhere they would be ignored without a word),
    and take the documented forms only (jobs.results.series alone would also read 20240501 or an empty value)."""
    problems = {}
    for name in sorted({"from", "to"} & set(request.query_params)):
        if request.query_params.get("range") != "custom":
            problems[name] = [f"Give {name} only with range=custom; this range sets its own."]
        elif not re.fullmatch(ISO_MOMENT["pattern"], request.query_params[name]):
            problems[name] = [f"Give {name} as an ISO date or date-time, e.g. 2024-05-01 or 2024-05-01T08:00Z."]
    if problems:
        raise ValidationError(problems)


def _compliance_query(request: Request) -> compliance.Query:
    try:
        return compliance.parse(request.query_params)
    except compliance.BadRequest as exc:
        raise ValidationError({exc.parameter: [str(exc)]}) from None


class DiskViewSet(viewsets.ModelViewSet, TeamViewSet):
    """Disks with their spec and the theoretical limits it gives (Disk.limits())."""

    serializer_class = DiskSerializer
    http_method_names = ["get", "post", "patch", "put", "delete", "head", "options"]
    list_parameters = ("host",)

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Disk.objects.none()
        disks = Disk.objects.filter(team=self.team).select_related("host")
        host = self.request.query_params.get("host")
        if self.action == "list" and host:
            disks = disks.filter(host_id=parse_id(host, "host"))
        return disks

    @extend_schema(parameters=[OpenApiParameter("host", ID_SCHEMA, description="Only this host's disks.")])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    def perform_create(self, serializer: serializers.BaseSerializer[Disk]) -> None:
        # The identity is asked of the host now; when it cannot answer, identity_note in the answer says why.
        identity.identify_new_target(serializer.save(), self.request.user)

    def perform_update(self, serializer: serializers.BaseSerializer[Disk]) -> None:
        assert serializer.instance is not None  # an update has the disk it changes
        was = serializer.instance.target_path, serializer.instance.kind
        disk = serializer.save()
        if (disk.target_path, disk.kind) != was:
            identity.identify_new_target(disk, self.request.user)

    @extend_schema(request=None, responses={200: DiskSerializer, 409: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["post"])
    def identity(self, request: Request, pk: str) -> Response:
        """Record what the target is now (WWN, serial, by-id, a loop device's backing file; a directory's
        filesystem UUID): write runs are refused when a different disk sits at the path. Use it after
        replacing the disk on purpose. 409 when the host cannot say (unreachable, the target missing)."""
        disk = self.get_object()
        try:
            identity.record_disk_identity(disk, request.user)
        except identity.IdentityUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(self.get_serializer(disk).data)

    @extend_schema(responses={200: DiskBurstSerializer})
    @action(detail=True, methods=["get"])
    def burst(self, request: Request, pk: str) -> Response:
        """Burst credits: the disk's credit bucket, its balance now predicted from the disk's runs, and each run
        replayed (balance at start and end, served from burst or not). `model` is null, with `why`, for a disk
        whose type has no credit bucket."""
        return Response(burst.disk_burst(self.get_object()).as_dict())

    @extend_schema(
        methods=["post"],
        request=PreconditionRecordSerializer,
        responses={200: DiskSerializer, 400: OpenApiTypes.OBJECT},
    )
    @extend_schema(methods=["delete"], request=None, responses={200: DiskSerializer})
    @action(detail=True, methods=["post", "delete"])
    def precondition(self, request: Request, pk: str) -> Response:
        """Record a preconditioning of a block device done outside benchweb (POST {"how", "at"}), or clear the
        record (DELETE). A run with a fill records its own when it succeeds. While no record counts, runs on the
        device carry a fresh-block warning."""
        disk = self.get_object()
        if request.method == "DELETE":
            precondition.clear(disk)
            return Response(self.get_serializer(disk).data)
        given = PreconditionRecordSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        try:
            precondition.record_by_hand(disk, at=given.validated_data.get("at"), how=given.validated_data["how"],
                                        user=request.user)  # fmt: skip
        except precondition.RecordError as exc:
            raise ValidationError({exc.field: [str(exc)]}) from exc
        return Response(self.get_serializer(disk).data)

    @extend_schema(
        parameters=COMPLIANCE_PARAMETERS, responses={200: DiskComplianceSerializer, 400: OpenApiTypes.OBJECT}
    )
    @action(detail=True, methods=["get"])
    def compliance(self, request: Request, pk: str) -> Response:
        """Promise compliance over a period: the runs measured against their baseline limit at their block size,
        the share below it (below_share, 0-1) at the tolerance, the share of per-second samples below it, the
        worst hour, the longest streak of misses and the limit's source. Runs with no limit count as no_promise.
        400 names the parameter to fix."""
        disk = self.get_object()
        query = _compliance_query(request)
        return Response(compliance.disk_compliance(disk, query))

    @extend_schema(parameters=COMPLIANCE_PARAMETERS, responses={200: DiskStabilitySerializer, 400: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def stability(self, request: Request, pk: str) -> Response:
        """Noisy neighbours: the hour-of-week heatmap (UTC) of the period's median IOPS and p99 latency, and the
        drops (runs below 80 % of their disk x profile median) that disks on other hosts of the site shared in
        time. The tolerance does not apply here."""
        disk = self.get_object()
        query = _compliance_query(request)
        return Response(
            {"heatmap": stability.heatmap(disk, query), "shared_drops": stability.shared_drops(disk, query)}
        )

    @extend_schema(parameters=SERIES_PARAMETERS, responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def series(self, request: Request, pk: str) -> Response:
        """The disk chart's series: successful runs per profile against the disk's limits, downsampled."""
        disk = self.get_object()
        _custom_range_only(request)
        try:
            return Response(series.disk_series(disk, request.query_params))
        except series.BadRequest as exc:
            return Response({"error": str(exc)}, status=status.HTTP_400_BAD_REQUEST)


class DiskTypeViewSet(TeamViewSet):
    """The disk-type catalog the limits are computed from (read-only)."""

    serializer_class = DiskTypeSerializer
    lookup_value_regex = r"[^/]+"

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(limits.disk_types())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(
        responses=DiskTypeSerializer,
        parameters=[OpenApiParameter("id", str, OpenApiParameter.PATH, description="e.g. aws-gp3")],
    )
    def retrieve(self, request: Request, pk: str) -> Response:
        found = next((kind for kind in limits.disk_types() if kind.id == pk), None)
        if found is None:
            raise Http404(f"No disk type {pk!r}; GET /api/v1/disk-types/ lists them.")
        return Response(DiskTypeSerializer(found).data)
