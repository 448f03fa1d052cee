"""The API's change points (GET /api/v1/change-points/?disk=, POST .../{id}/expected/) and annotations."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from jobs.api.base import ID_SCHEMA, ModelSerializer, TeamScoped, TeamViewSet, parse_id, team_of
from jobs.api.errors import django_errors
from jobs.models import Annotation, ChangePoint, Disk, Host


class AnnotationSerializer(ModelSerializer):
    disk = TeamScoped(queryset=Disk.objects.all(), allow_null=True, required=False, help_text="Only this disk.")
    host = TeamScoped(
        queryset=Host.objects.all(), allow_null=True, required=False, help_text="Every disk of this host."
    )

    class Meta:
        model = Annotation
        fields = ["id", "disk", "host", "at", "text", "kind", "created_by", "created_at"]
        read_only_fields = ["created_by", "created_at"]
        extra_kwargs = {"text": {"help_text": "What happened. Neither disk nor host: the whole team's."}}

    created_by = serializers.CharField(source="created_by.username", read_only=True, allow_null=True, default=None)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        was = self.instance
        draft = Annotation(
            team=team_of(self),
            disk=attrs.get("disk", was.disk if was else None),
            host=attrs.get("host", was.host if was else None),
            text=attrs.get("text", was.text if was else ""),
        )
        try:
            draft.clean()
        except DjangoValidationError as exc:
            raise django_errors(exc) from exc
        return attrs

    def save(self, **kwargs: Any) -> Annotation:
        if self.instance is None:
            kwargs["created_by"] = self.context["request"].user
        return super().save(team=team_of(self), **kwargs)


class ChangePointSerializer(serializers.ModelSerializer):
    run = serializers.IntegerField(source="run_id", help_text="The first run at the new level.")
    profile = serializers.IntegerField(source="profile_id", allow_null=True)
    unit = serializers.CharField(help_text="IOPS, B/s or µs.")
    annotation = serializers.IntegerField(
        source="annotation_id", allow_null=True, help_text="Once marked expected: the annotation it became."
    )

    class Meta:
        model = ChangePoint
        fields = [
            "id", "disk", "profile", "profile_name", "metric", "unit", "at", "run", "before", "after",
            "change_percent", "p_value", "runs_before", "runs_after", "direction", "steady_only", "expected",
            "annotation", "detected_at",
        ]  # fmt: skip
        read_only_fields = fields


class ExpectedSerializer(serializers.Serializer):
    text = serializers.CharField(
        max_length=300, required=False, allow_blank=True, help_text="The annotation's words; empty: the change's."
    )


class ChangePointViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TeamViewSet):
    """Level shifts found in the disks' results, newest first; found when runs are recorded."""

    serializer_class = ChangePointSerializer
    list_parameters = ("disk", "metric", "expected")

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return ChangePoint.objects.none()
        found = ChangePoint.objects.filter(team=self.team)
        if self.action != "list":
            return found
        params = self.request.query_params
        if disk := params.get("disk"):
            found = found.filter(disk_id=parse_id(disk, "disk"))
        if metric := params.get("metric"):
            if metric not in ChangePoint.Metric.values:
                raise serializers.ValidationError({"metric": [f"Give one of {', '.join(ChangePoint.Metric.values)}."]})
            found = found.filter(metric=metric)
        if expected := params.get("expected"):
            if expected not in ("true", "false"):
                raise serializers.ValidationError({"expected": ["Give true or false."]})
            found = found.filter(expected=expected == "true")
        return found

    @extend_schema(
        parameters=[
            OpenApiParameter("disk", ID_SCHEMA, description="Only this disk's change points."),
            OpenApiParameter("metric", str, enum=ChangePoint.Metric.values),
            OpenApiParameter("expected", str, enum=["true", "false"], description="Only those marked (or not)."),
        ]
    )
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(request=ExpectedSerializer, responses={200: ChangePointSerializer})
    @action(detail=True, methods=["post"])
    def expected(self, request: Request, pk: str) -> Response:
        """Mark it expected: it becomes an annotation on its disk and the new baseline of its series."""
        change = self.get_object()
        words = ExpectedSerializer(data=request.data)
        words.is_valid(raise_exception=True)
        if not change.expected:
            change.mark_expected(request.user, words.validated_data.get("text", ""))
        return Response(self.get_serializer(ChangePoint.objects.get(pk=change.pk)).data)


class AnnotationViewSet(viewsets.ModelViewSet, TeamViewSet):
    """Events people noted for a disk, a host or the team; drawn on the charts of the disks they concern."""

    serializer_class = AnnotationSerializer
    http_method_names = ["get", "post", "patch", "put", "delete", "head", "options"]
    list_parameters = ("disk",)

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Annotation.objects.none()
        found = Annotation.objects.filter(team=self.team).select_related("created_by")
        disk = self.request.query_params.get("disk")
        if self.action == "list" and disk:
            the_disk = Disk.objects.filter(team=self.team, pk=parse_id(disk, "disk")).first()
            found = Annotation.for_disk(the_disk).select_related("created_by") if the_disk else found.none()
        return found

    @extend_schema(
        parameters=[
            OpenApiParameter("disk", ID_SCHEMA, description="Those a disk's charts show: its, its host's, the team's.")
        ]
    )
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)
