"""The API's share links: POST /api/v1/share-links/ makes one of a disk page, a comparison, a sweep or a group (its
address is in the answer, once), GET lists the team's, DELETE revokes one (the row stays, answering 410 to its
address, for the list and the audit log)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from jobs import links
from jobs.api.base import JsonTypes, TeamScoped, TeamViewSet, team_of
from jobs.models import Disk, RunSet, ShareLink
from jobs.models.sharing import DEFAULT_DAYS, MAX_DAYS
from jobs.shares import sharing

DAYS_MESSAGE = f"A link lasts 1 to {MAX_DAYS} days: give a whole number in that range, e.g. 7."


class CompareQuerySerializer(JsonTypes, serializers.Serializer):
    """What a comparison link shows: the Compare page's ?disks= or ?runs=, with the Statistics card's choices."""

    disks = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False,
                                  help_text="2 to 8 disk ids of your team; or runs.")  # fmt: skip
    runs = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False,
                                 help_text="2 to 8 run ids of your team; or disks.")  # fmt: skip
    profile = serializers.CharField(required=False, max_length=200, help_text="With disks: the Statistics card's.")
    metric = serializers.ChoiceField(choices=list(sharing.stats.METRICS), required=False)
    test = serializers.ChoiceField(choices=list(sharing.analysis.TESTS), required=False)
    skip_unsteady = serializers.ChoiceField(choices=["true", "false"], required=False)
    a_disk = serializers.CharField(required=False, max_length=20, help_text="One of disks: set A of the statistics.")
    b_disk = serializers.CharField(required=False, max_length=20, help_text="One of disks: set B of the statistics.")


class ShareLinkSerializer(JsonTypes, serializers.ModelSerializer):
    """A read-only link to a disk page (kind disk, with disk), a comparison (kind compare, with compare) or a
    sweep's page (kind sweep, with run_set)."""

    disk = TeamScoped(queryset=Disk.objects.all(), required=False, allow_null=True,
                      help_text="With kind disk: the disk whose page the link shows.")  # fmt: skip
    run_set = TeamScoped(queryset=RunSet.objects.filter(kind__in=sharing.SHARED_SETS), required=False, allow_null=True,
                         help_text="With kind sweep or group: the sweep or group (a set of runs) whose page the link "
                                   "shows.")  # fmt: skip
    compare = CompareQuerySerializer(required=False, allow_null=True, help_text="With kind compare.")
    expires_in_days = serializers.IntegerField(
        write_only=True, required=False, default=DEFAULT_DAYS, min_value=1, max_value=MAX_DAYS,
        error_messages={"min_value": DAYS_MESSAGE, "max_value": DAYS_MESSAGE, "invalid": DAYS_MESSAGE},
        help_text=f"How long the link works, in days: 1 to {MAX_DAYS}, {DEFAULT_DAYS} unless given.",
    )  # fmt: skip
    created_by = serializers.CharField(source="created_by.username", read_only=True, default="")
    state = serializers.ChoiceField(choices=["active", "expired", "revoked"], read_only=True)

    class Meta:
        model = ShareLink
        fields = ["id", "kind", "disk", "compare", "run_set", "expires_in_days", "expires_at", "created_at",
                  "created_by", "revoked_at", "last_viewed_at", "view_count", "state"]  # fmt: skip
        read_only_fields = ["expires_at", "created_at", "revoked_at", "last_viewed_at", "view_count"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        kind, disk, compare, run_set = attrs["kind"], attrs.get("disk"), attrs.get("compare"), attrs.get("run_set")
        if kind == ShareLink.Kind.DISK:
            if disk is None or compare or run_set is not None:
                raise serializers.ValidationError({"disk": ["A disk link names its disk (and no compare or run_set)."]})
            return attrs
        if kind in (ShareLink.Kind.SWEEP, ShareLink.Kind.GROUP):
            if run_set is None or compare or disk is not None or ShareLink.set_kind(run_set) != kind:
                raise serializers.ValidationError(
                    {"run_set": [f'A {kind} link names its {kind}, e.g. {{"run_set": 12}}.']}
                )
            return attrs
        if disk is not None or run_set is not None or not compare:
            raise serializers.ValidationError({"compare": ['A comparison link gives compare, e.g. {"disks": [3, 7]}.']})
        try:
            attrs["compare"] = sharing.compare_query(compare, team_of(self))
        except sharing.ShareRefused as exc:
            raise serializers.ValidationError({exc.field: [str(exc)]}) from exc
        return attrs


class NewShareLinkSerializer(ShareLinkSerializer):
    """The link just made, with its address: the only time the address is given."""

    url = serializers.CharField(read_only=True, help_text="The link's whole address. It is shown this once only.")

    class Meta(ShareLinkSerializer.Meta):
        fields = [*ShareLinkSerializer.Meta.fields, "url"]


@extend_schema_view(
    create=extend_schema(
        responses={201: NewShareLinkSerializer}, summary="Make a share link (its address is shown once)"
    ),
    destroy=extend_schema(summary="Revoke a share link", responses={204: None}),
)
class ShareLinkViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin, TeamViewSet
):
    """Read-only links to a disk page, a comparison, a sweep or a group for people without an account. Every member
    sees the team's links; members and owners make and revoke them."""

    serializer_class = ShareLinkSerializer

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return ShareLink.objects.none()
        return ShareLink.objects.filter(team=self.team).select_related("created_by")

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            link, token = sharing.create(self.team, request.user, days=data["expires_in_days"], disk=data.get("disk"),
                                         compare=data.get("compare"), run_set=data.get("run_set"))  # fmt: skip
        except sharing.ShareRefused as exc:
            raise serializers.ValidationError({exc.field: [str(exc)]}) from exc
        link.url = links.absolute(reverse("shared", args=[token]), request)  # type: ignore[attr-defined]  # shown once
        return Response(NewShareLinkSerializer(link, context=self.get_serializer_context()).data,
                        status=status.HTTP_201_CREATED)  # fmt: skip

    def perform_destroy(self, instance: ShareLink) -> None:
        sharing.revoke(instance, self.request.user)
