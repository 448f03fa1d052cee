"""The API's alerts (GET /api/v1/alerts/?state=&kind=&disk=, POST .../{id}/acknowledge/ and .../{id}/expected/)
and the team's alert rules (GET /api/v1/alert-rules/, GET and PUT /api/v1/alert-rules/{kind}/)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, serializers
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from jobs.alerts import lifecycle
from jobs.api.base import ID_SCHEMA, ModelSerializer, TeamViewSet, parse_id
from jobs.changes.api import ExpectedSerializer
from jobs.models import Alert, AlertRule


class AlertSerializer(serializers.ModelSerializer):
    host = serializers.IntegerField(source="host_id", allow_null=True)
    disk = serializers.IntegerField(source="disk_id", allow_null=True)
    profile = serializers.IntegerField(source="profile_id", allow_null=True)
    schedule = serializers.IntegerField(source="schedule_id", allow_null=True)
    change_point = serializers.IntegerField(source="change_point_id", allow_null=True)
    acknowledged_by = serializers.CharField(
        source="acknowledged_by.username", read_only=True, allow_null=True, default=None
    )
    runs = serializers.SerializerMethodField(help_text="The runs behind it, newest first (at most 20).")
    links = serializers.SerializerMethodField(help_text="Absolute URLs: the alert's page, the disk's chart, the runs.")

    class Meta:
        model = Alert
        fields = [
            "id", "kind", "state", "title", "summary", "condition", "opened_at", "last_seen_at", "reopened_count",
            "acknowledged_at", "acknowledged_by", "resolved_at", "resolution", "host", "disk", "profile",
            "profile_name", "schedule", "change_point", "run_set", "runs", "links",
        ]  # fmt: skip
        read_only_fields = fields

    def get_runs(self, alert: Alert) -> list[int]:
        return [run.pk for run in alert.run_list()]

    @extend_schema(
        responses={
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "chart_url": {"type": "string", "nullable": True},
                "run_urls": {"type": "array", "items": {"type": "string"}},
            },
        }
    )
    def get_links(self, alert: Alert) -> dict[str, Any]:
        described = lifecycle.describe(alert)
        return {key: described[key] for key in ("url", "chart_url", "run_urls")}


class AlertViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TeamViewSet):
    """The team's alerts: open first, then acknowledged, then resolved, newest first within each."""

    serializer_class = AlertSerializer
    list_parameters = ("state", "kind", "disk")

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Alert.objects.none()
        found = Alert.objects.filter(team=self.team).select_related("team", "host", "disk__host", "acknowledged_by")
        if self.action != "list":
            return found
        params = self.request.query_params
        for name, choices in (("state", Alert.State.values), ("kind", Alert.Kind.values)):
            if (value := params.get(name)) is not None:
                if value not in choices:
                    raise serializers.ValidationError({name: [f"Give one of {', '.join(choices)}."]})
                found = found.filter(**{name: value})
        if disk := params.get("disk"):
            found = found.filter(disk_id=parse_id(disk, "disk"))
        return lifecycle.ordered(found)

    @extend_schema(
        parameters=[
            OpenApiParameter("state", str, enum=Alert.State.values, description="Only alerts in this state."),
            OpenApiParameter("kind", str, enum=Alert.Kind.values, description="Only alerts of this kind."),
            OpenApiParameter("disk", ID_SCHEMA, description="Only this disk's alerts."),
        ]
    )
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(request=None, responses={200: AlertSerializer})
    @action(detail=True, methods=["post"])
    def acknowledge(self, request: Request, pk: str) -> Response:
        """Say a person has seen it: it stays until its condition clears, but no longer counts as open."""
        alert = self.get_object()
        if alert.is_resolved:
            raise serializers.ValidationError(
                {"state": ["This alert is already resolved: there is nothing to acknowledge. Nothing was changed."]}
            )
        lifecycle.acknowledge(alert, request.user)
        return Response(self.get_serializer(alert).data)

    @extend_schema(request=ExpectedSerializer, responses={200: AlertSerializer})
    @action(detail=True, methods=["post"])
    def expected(self, request: Request, pk: str) -> Response:
        """Triage a regression as expected: its change points become an annotation and the new baseline, and
        the alert is resolved."""
        alert = self.get_object()
        if alert.kind != Alert.Kind.REGRESSION:
            raise serializers.ValidationError({"kind": [
                f"Only a regression can be marked expected; this alert is {alert.get_kind_display().lower()}. "
                "Acknowledge it instead. Nothing was changed."
            ]})  # fmt: skip
        if alert.is_resolved:
            raise serializers.ValidationError({"state": ["This regression is already resolved. Nothing was changed."]})
        words = ExpectedSerializer(data=request.data)
        words.is_valid(raise_exception=True)
        lifecycle.mark_expected(alert, request.user, words.validated_data.get("text", ""))
        return Response(self.get_serializer(alert).data)


class AlertRuleSerializer(ModelSerializer):
    help = serializers.CharField(read_only=True, help_text="What this kind watches.")

    class Meta:
        model = AlertRule
        fields = ["kind", "enabled", "consecutive_runs", "intervals", "promise_percent", "spread_percent", "help"]
        read_only_fields = ["kind"]


KIND_PATH = OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=Alert.Kind.values, description="The kind.")


@extend_schema_view(
    retrieve=extend_schema(parameters=[KIND_PATH]),
    update=extend_schema(parameters=[KIND_PATH]),
    partial_update=extend_schema(parameters=[KIND_PATH]),
)
class AlertRuleViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.UpdateModelMixin, TeamViewSet):
    """One rule per kind of alert; a kind the team never changed reads as its default (every kind on)."""

    serializer_class = AlertRuleSerializer
    lookup_field = "kind"
    lookup_value_regex = "[a-z_]+"
    http_method_names = ["get", "put", "patch", "head", "options"]
    pagination_class = None

    def get_queryset(self) -> QuerySet:
        return AlertRule.objects.none()

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        rules = AlertRule.for_team(self.team.pk).values()
        return Response(self.get_serializer(list(rules), many=True).data)

    def get_object(self) -> AlertRule:
        kind = self.kwargs["kind"]
        if kind not in Alert.Kind.values:
            raise NotFound(f"There is no alert kind {kind!r}; the kinds are {', '.join(Alert.Kind.values)}.")
        return AlertRule.of(self.team.pk, kind)

    def perform_update(self, serializer: serializers.BaseSerializer) -> None:
        rule = serializer.instance
        assert isinstance(rule, AlertRule)
        for name, value in serializer.validated_data.items():
            setattr(rule, name, value)
        lifecycle.save_rule(rule)
