"""The API's alert channels (/api/v1/alert-channels/): create, list, change and delete them, send a test, read a
channel's delivery log. A webhook's signing secret is in the answer to its creation and never again."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from jobs.api.base import PLACEHOLDER, ModelSerializer, TeamViewSet, team_of
from jobs.api.pagination import Pagination
from jobs.models import AlertChannel, Delivery, Membership
from jobs.models.channels import EVENTS, KINDS
from jobs.notify import delivery
from jobs.notify.channels import ChannelInput, ChannelRefused, rotate_secret, save_channel


def _not_one_of(what: str, choices: tuple[str, ...]) -> str:
    return "{input!r} is not an alert " + what + "; choose from " + ", ".join(choices) + "."


class AlertChannelSerializer(ModelSerializer):
    kind = serializers.ChoiceField(
        choices=AlertChannel.Kind.choices, help_text="Fixed once the channel exists.",
        error_messages={
            "required": "Choose the kind of channel: email, webhook or apprise.",
            "invalid_choice": "{input!r} is not a kind of channel; choose email, webhook or apprise.",
        },
    )  # fmt: skip
    name = serializers.CharField(
        max_length=100, required=False, help_text="Unique in the team; left out: made from the target."
    )
    url = serializers.CharField(
        write_only=True, required=False, max_length=2000,
        help_text="webhook: the http(s) URL to POST to; apprise: the service's Apprise URL (slack://…, msteams://…).",
    )  # fmt: skip
    addresses = serializers.ListField(
        child=serializers.CharField(max_length=254), required=False, max_length=50,
        help_text="email: the addresses alerts go to.",
    )  # fmt: skip
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENTS, error_messages={"invalid_choice": _not_one_of("event", EVENTS)}),
        required=False, help_text="Empty or left out: every event.",
    )  # fmt: skip
    kinds = serializers.ListField(
        child=serializers.ChoiceField(choices=KINDS, error_messages={"invalid_choice": _not_one_of("kind", KINDS)}),
        required=False, help_text="Empty or left out: every kind.",
    )  # fmt: skip
    secret = serializers.SerializerMethodField(
        help_text="webhook: the signing secret in the answer to the creation only; afterwards "
        f"'{PLACEHOLDER}'. Empty for other kinds."
    )
    dead = serializers.BooleanField(source="is_dead", read_only=True, help_text="Its last attempts all failed.")
    created_by = serializers.CharField(source="created_by.username", read_only=True, allow_null=True, default=None)
    # A webhook's secret just made (at creation or rotation): in this one answer, never read back.
    new_secret: str | None = None

    class Meta:
        model = AlertChannel
        fields = [
            "id", "name", "kind", "target", "url", "addresses", "secret", "events", "kinds", "enabled", "dead",
            "failures_in_a_row", "last_error", "last_sent_at", "last_failed_at", "created_by", "created_at",
        ]  # fmt: skip
        read_only_fields = ["target", "failures_in_a_row", "last_error", "last_sent_at", "last_failed_at"]

    @extend_schema_field(serializers.CharField())
    def get_secret(self, channel: AlertChannel) -> str:
        if channel.kind != AlertChannel.Kind.WEBHOOK:
            return ""
        return self.new_secret or PLACEHOLDER

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        self.entered = ChannelInput(
            kind=attrs.get("kind"), name=attrs.get("name"), url=attrs.get("url"), addresses=attrs.get("addresses"),
            events=attrs.get("events"), kinds=attrs.get("kinds"), enabled=attrs.get("enabled"),
        )  # fmt: skip
        return attrs

    def save(self, **kwargs: Any) -> AlertChannel:
        try:
            self.instance, self.new_secret = save_channel(
                self.instance, self.entered, team=team_of(self), user=self._user
            )
        except ChannelRefused as exc:
            raise serializers.ValidationError({exc.field: [str(exc)]}) from exc
        return self.instance

    @property
    def _user(self) -> Any:
        return self.context["request"].user


class DeliverySerializer(serializers.ModelSerializer):
    class Meta:
        model = Delivery
        fields = [
            "id", "channel", "summary", "event", "state", "attempts", "response", "error", "created_at",
            "last_attempt_at", "sent_at", "next_attempt_at",
        ]  # fmt: skip
        read_only_fields = fields


class AlertChannelViewSet(viewsets.ModelViewSet, TeamViewSet):
    """Where the team's alerts go: e-mail, signed webhooks, and Slack, Teams, Discord, Matrix, PagerDuty and the
    rest through Apprise. Owners manage channels; members may send a test."""

    serializer_class = AlertChannelSerializer
    change_role = Membership.Role.OWNER
    change_roles = {"test": Membership.Role.MEMBER}
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return AlertChannel.objects.none()
        return AlertChannel.objects.filter(team=self.team).select_related("created_by")

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        body.save()
        return Response(body.data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={202: DeliverySerializer})
    @action(detail=True, methods=["post"])
    def test(self, request: Request, pk: str) -> Response:
        """Send a synthetic alert of kind "test" to this channel; its delivery shows in the log."""
        sent = delivery.send_test(self.get_object(), request.user.get_username())
        return Response(DeliverySerializer(sent).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={200: AlertChannelSerializer})
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request: Request, pk: str) -> Response:
        """A webhook's new signing secret, in this answer only; the old one signs nothing more."""
        channel = self.get_object()
        try:
            body = AlertChannelSerializer(channel, context=self.get_serializer_context())
            body.new_secret = rotate_secret(channel)
        except ChannelRefused as exc:
            raise serializers.ValidationError({exc.field: [str(exc)]}) from exc
        return Response(body.data)

    @extend_schema(responses={200: DeliverySerializer(many=True)})
    @action(detail=True, methods=["get"], pagination_class=Pagination)
    def deliveries(self, request: Request, pk: str) -> Response:
        """The channel's delivery log, newest first: each event, its state, attempts and the last answer."""
        page = self.paginate_queryset(self.get_object().deliveries.all())
        return self.get_paginated_response(DeliverySerializer(page, many=True).data)
