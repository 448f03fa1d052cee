"""The API's teams, members and personal tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict, cast

from django.db.models import OuterRef, QuerySet, Subquery
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from audit import log as audit
from audit.models import AuditEvent
from jobs.analysis import verdicts
from jobs.api.base import ModelSerializer, TeamViewSet, team_of
from jobs.api.models import ApiToken
from jobs.models import Membership, Team
from jobs.teams import membership as teams

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    class MyRole(TypedDict):
        my_role: str


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


class TeamSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField()
    current = serializers.SerializerMethodField()

    class Meta:
        model = Team
        fields = ["id", "name", "role", "current", "created_at"]

    @extend_schema_field(serializers.ChoiceField(choices=Membership.Role.choices))
    def get_role(self, team: Team) -> str:
        return cast("WithAnnotations[Team, MyRole]", team).my_role  # as TeamListViewSet annotates its teams

    def get_current(self, team: Team) -> bool:
        return team.pk == team_of(self).pk


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
        return super().save(team=team_of(self), **kwargs)


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


@extend_schema_view(
    create=extend_schema(responses={201: NewTokenSerializer}, summary="Create a token (its secret is shown once)"),
    destroy=extend_schema(summary="Revoke a token", responses={204: None}),
)
class TokenViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin, TeamViewSet
):
    """Your own API tokens in the current team. Every member may have tokens; a token has its maker's role."""

    serializer_class = TokenSerializer
    change_role = Membership.Role.VIEWER

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return ApiToken.objects.none()
        return ApiToken.objects.filter(user=teams.signed_in_user(self.request), team=self.team)

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        token, secret = ApiToken.issue(request.user, self.team, **serializer.validated_data)
        audit.record(self.team, request.user, AuditEvent.Action.TOKEN_CREATED, token, name=token.name,
                     prefix=token.prefix, expires_at=token.expires_at and token.expires_at.isoformat())  # fmt: skip
        token.token = secret  # type: ignore[attr-defined]  # for NewTokenSerializer only, not a field
        return Response(NewTokenSerializer(token).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: ApiToken) -> None:
        instance.revoke()
        audit.record(self.team, self.request.user, AuditEvent.Action.TOKEN_REVOKED, instance, prefix=instance.prefix)


class TeamSettingsSerializer(serializers.Serializer):
    """The current team's settings, as its Team settings page has them (docs/user-guide/verdicts.md)."""

    team = serializers.CharField(source="name", read_only=True)
    sweep_bound_minutes = serializers.IntegerField(
        required=False, min_value=1, max_value=7 * 24 * 60,
        help_text="The longest sweep (points × (ramp + runtime)) the team may start, in minutes: 1 to 10,080.",
    )  # fmt: skip
    verdict_thresholds = serializers.DictField(
        child=serializers.JSONField(allow_null=True), required=False,
        help_text="The team's own verdict thresholds by key (the others hold their defaults). On a write, a key "
        "given a number sets it, a key given null goes back to its default, and keys not given stay as they are.",
    )  # fmt: skip
    effective_thresholds = serializers.SerializerMethodField(
        help_text="Every threshold the verdicts are judged with now: the defaults with the team's own over them."
    )

    def get_effective_thresholds(self, team: Team) -> dict[str, float]:
        return team.verdict_limits()

    def to_representation(self, team: Team) -> dict[str, Any]:
        shown = super().to_representation(team)
        shown["sweep_bound_minutes"] = team.sweep_bound_s // 60
        shown["verdict_thresholds"] = dict(team.verdict_thresholds or {})
        return shown

    def validate_verdict_thresholds(self, asked: dict[str, Any]) -> dict[str, Any]:
        # null (back to the default) is right for any threshold; a key no threshold has is named as such.
        problems = verdicts.threshold_problems(
            {key: verdicts.DEFAULT_THRESHOLDS.get(key) if value is None else value for key, value in asked.items()}
        )
        if problems:
            raise serializers.ValidationError(problems)
        merged = dict(self.instance.verdict_thresholds or {}) if self.instance else {}
        for key, value in asked.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        return merged

    def update(self, team: Team, validated: dict[str, Any]) -> Team:
        if "sweep_bound_minutes" in validated:
            team.sweep_bound_s = validated["sweep_bound_minutes"] * 60
        if "verdict_thresholds" in validated:
            team.verdict_thresholds = validated["verdict_thresholds"]
        team.save(update_fields=["sweep_bound_s", "verdict_thresholds"])
        return team


class TeamListViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TeamViewSet):
    """The teams you are in, your role in each, and which one this request acts in; the current team's settings."""

    serializer_class = TeamSerializer
    change_roles = {"team_settings": Membership.Role.OWNER}

    @extend_schema(request=TeamSettingsSerializer, responses=TeamSettingsSerializer)
    @action(detail=False, methods=["get", "patch"], url_path="settings", serializer_class=TeamSettingsSerializer)
    def team_settings(self, request: Request) -> Response:
        """The current team's settings (its longest sweep, its verdict thresholds): members and viewers read them,
        owners change them (PATCH, only the fields given)."""
        team = self.team
        if request.method == "GET":
            return Response(TeamSettingsSerializer(team).data)
        found = TeamSettingsSerializer(team, data=request.data, partial=True)
        found.is_valid(raise_exception=True)
        return Response(TeamSettingsSerializer(found.save()).data)

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Team.objects.none()
        user = teams.signed_in_user(self.request)
        mine = Membership.objects.filter(user=user, team=OuterRef("pk"))
        teams_of_user = Team.objects.filter(memberships__user=user)
        return teams_of_user.annotate(my_role=Subquery(mine.values("role")[:1])).order_by("name")


class MemberViewSet(viewsets.ModelViewSet, TeamViewSet):
    """Members of the current team. Owners invite people by username or email, change roles and remove them."""

    change_role = Membership.Role.OWNER
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_serializer_class(self) -> type[serializers.Serializer]:
        return InviteSerializer if self.action == "create" else MemberSerializer

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Membership.objects.none()
        return Membership.objects.filter(team=self.team).select_related("user").order_by("created_at", "pk")

    @extend_schema(responses={202: InvitedSerializer}, summary="Invite someone (they join when they accept)")
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Invite whoever has this username or email; the answer is the same whether or not such an account exists."""
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            invitation = teams.invite(
                self.team, teams.signed_in_user(request), body.validated_data["user"], body.validated_data["role"]
            )
        except teams.MembershipRefused as exc:
            raise ValidationError({"user": [str(exc)]}) from exc
        answer = {"detail": teams.invited_message(invitation), "invited_as": invitation.invited_as,
                  "role": invitation.role, "expires_at": invitation.expires_at}  # fmt: skip
        return Response(InvitedSerializer(answer).data, status=status.HTTP_202_ACCEPTED)

    def perform_update(self, serializer: serializers.BaseSerializer[Membership]) -> None:
        assert serializer.instance is not None  # an update has the membership it changes
        before = serializer.instance.role
        membership = serializer.save()
        if membership.role != before:
            audit.record(self.team, self.request.user, AuditEvent.Action.MEMBER_ROLE_CHANGED, membership,
                         member=membership.user.get_username(), role_from=before, role_to=membership.role)  # fmt: skip

    def perform_destroy(self, membership: Membership) -> None:
        if membership.role == Membership.Role.OWNER:
            try:
                last_owner_guard(membership)
            except ValidationError as exc:
                raise ValidationError({"detail": LAST_OWNER}) from exc
        audit.record(self.team, self.request.user, AuditEvent.Action.MEMBER_REMOVED, membership,
                     member=membership.user.get_username(), role=membership.role)  # fmt: skip
        membership.delete()
