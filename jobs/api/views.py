"""The REST API under /api/v1/. Every queryset is the caller's team's; another team's id is a 404.

The work is the domain's: runs start and stop through jobs.services, host keys are scanned and pinned there,
schedules are checked by jobs.scheduling, and the chart series come from jobs.chart_views.
"""

from __future__ import annotations

import copy
import re
from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import OuterRef, ProtectedError, Q, QuerySet, Subquery
from django.http import Http404, HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from audit import log as audit
from audit.models import AuditEvent
from jobs import chart_views, dispatcher, errors, limits, scheduling, services, ssh, teams, timeseries
from jobs.api import serializers as s
from jobs.api.auth import Access, access
from jobs.api.models import ApiToken
from jobs.api.pagination import NewestFirst, Pagination
from jobs.api.permissions import TeamRole
from jobs.manage_views import _connection_test
from jobs.models import Disk, Host, Membership, Profile, Run, Schedule, Team
from jobs.tools.summary import ParseError

MAX_ID = 2**63 - 1
ID_SCHEMA = {"type": "integer", "minimum": 1, "maximum": MAX_ID}
NEXT_FIRES_MAX = 50


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's JSON errors, plus the domain's refusals as field-level 400s."""
    request = context.get("request")
    if request is not None and (refused := errors.refusal(request, exc)):
        return Response({"detail": refused[1]}, status=refused[0])  # a body over the limit: 413, not Django's HTML
    if isinstance(exc, services.RunRefused):
        exc = ValidationError({exc.field: [str(exc)]})
    elif isinstance(exc, DjangoValidationError):
        exc = s.django_errors(exc)
    elif isinstance(exc, ProtectedError):
        users = ", ".join(sorted({str(obj) for obj in exc.protected_objects})[:5])
        return Response(
            {"detail": f"This is still used ({users}); remove it from there first. Nothing was deleted."},
            status=status.HTTP_409_CONFLICT,
        )
    return drf_exception_handler(exc, context)


class TeamViewSet(viewsets.GenericViewSet):
    """The caller's team and role, and role checks on writes (`change_role`, per action `change_roles`)."""

    permission_classes = [permissions.IsAuthenticated, TeamRole]
    change_role = Membership.Role.MEMBER

    @property
    def access(self) -> Access:
        found = access(self.request)
        assert found is not None  # TeamRole refused the request otherwise
        return found

    @property
    def team(self) -> Team:
        return self.access.team

    @property
    def fake(self) -> bool:
        # drf-spectacular builds views without a request to read their querysets' models.
        return getattr(self, "swagger_fake_view", False)


# ----------------------------------------------------------------------------------------- tokens


@extend_schema_view(
    create=extend_schema(responses={201: s.NewTokenSerializer}, summary="Create a token (its secret is shown once)"),
    destroy=extend_schema(summary="Revoke a token", responses={204: None}),
)
class TokenViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin, TeamViewSet
):
    """Your own API tokens in the current team. Every member may have tokens; a token has its maker's role."""

    serializer_class = s.TokenSerializer
    change_role = Membership.Role.VIEWER

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return ApiToken.objects.none()
        return ApiToken.objects.filter(user=self.request.user, team=self.team)

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        token, secret = ApiToken.issue(request.user, self.team, **serializer.validated_data)
        audit.record(self.team, request.user, AuditEvent.Action.TOKEN_CREATED, token, name=token.name,
                     prefix=token.prefix, expires_at=token.expires_at and token.expires_at.isoformat())  # fmt: skip
        token.token = secret
        return Response(s.NewTokenSerializer(token).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: ApiToken) -> None:
        instance.revoke()
        audit.record(self.team, self.request.user, AuditEvent.Action.TOKEN_REVOKED, instance, prefix=instance.prefix)


# ----------------------------------------------------------------------------------------- hosts


class HostViewSet(viewsets.ModelViewSet, TeamViewSet):
    """Hosts and their SSH logins. Secrets are write-only; only owners change hosts."""

    serializer_class = s.HostSerializer
    change_role = Membership.Role.OWNER
    change_roles = {"test_connection": Membership.Role.MEMBER}
    http_method_names = ["get", "post", "patch", "put", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Host.objects.none()
        return Host.objects.filter(team=self.team).select_related("credential")

    @extend_schema(request=None, responses={200: s.ScannedKeySerializer, 400: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["post"], url_path="scan-key")
    def scan_key(self, request: Request, pk: str) -> Response:
        """Read the host's SSH key; compare its fingerprint with the host's own, then approve it."""
        host = self.get_object()
        try:
            key = services.scan_host_key(host)
        except ssh.SSHError as exc:
            raise ValidationError({"detail": f"Could not read the host key of {host.name}: {exc}"}) from exc
        matches = key.fingerprint == host.host_key_fingerprint if host.has_pinned_key else None
        message = (
            "Compare this fingerprint with the host's own (ssh-keygen -lf on it), then approve it."
            if matches is not False
            else "The host presents a DIFFERENT key from the approved one. Approve it only if you know why it "
            "changed (reinstall, new host); otherwise someone may be in between."
        )
        body = {
            "key_type": key.key_type,
            "fingerprint": key.fingerprint,
            "matches_approved": matches,
            "message": message,
        }
        return Response(s.ScannedKeySerializer(body).data)

    @extend_schema(request=s.ApproveKeySerializer, responses={200: s.HostSerializer})
    @action(detail=True, methods=["post"], url_path="approve-key")
    def approve_key(self, request: Request, pk: str) -> Response:
        """Pin the scanned key, only if its fingerprint is the one you compared."""
        host = self.get_object()
        body = s.ApproveKeySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.approve_host_key(host, request.user, body.validated_data["fingerprint"])
        return Response(self.get_serializer(host).data)

    @extend_schema(request=None, responses={200: s.ConnectionTestSerializer})
    @action(detail=True, methods=["post"], url_path="test-connection")
    def test_connection(self, request: Request, pk: str) -> Response:
        """Log in over SSH with the pinned key and the stored credential, and look for fio."""
        result = _connection_test(self.get_object(), request.user)
        return Response(s.ConnectionTestSerializer(result).data)


# ----------------------------------------------------------------------------------------- disks


def _delegate(request: Request, view: Any, pk: str) -> HttpResponse:
    """Call a page's JSON view in the API caller's team: the page reads the team from the session, so it gets
    a copy of the request whose session names that team (the real session is left alone)."""
    inner = copy.copy(request._request)
    inner.user = request.user
    inner.session = {teams.SESSION_KEY: access(request).team.pk}
    return view(inner, int(pk))


# An ISO date (a whole day) or date-time, as chart_views reads it; a date is not a `format: date-time`.
_TIME = r"[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?"
ISO_MOMENT = {"type": "string", "pattern": rf"^[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}({_TIME})?$"}
SERIES_PARAMETERS = [
    OpenApiParameter("range", str, enum=[*chart_views.RANGES, "custom"], description="Default 30d."),
    OpenApiParameter("from", ISO_MOMENT, description="Only with range=custom: an ISO date or date-time."),
    OpenApiParameter("to", ISO_MOMENT, description="Only with range=custom: an ISO date or date-time."),
    OpenApiParameter("profile", str, description="A profile id or name."),
    OpenApiParameter(
        "points",
        {"type": "integer", "minimum": 10, "maximum": timeseries.MAX_POINTS},
        description="Most points per series (downsampled on the server).",
    ),
]


def _custom_range_only(request: Request) -> None:
    """`from` and `to` mean something only with range=custom (elsewhere they would be ignored without a word),
    and take the documented forms only (chart_views alone would also read 20240501 or an empty value)."""
    problems = {}
    for name in sorted({"from", "to"} & set(request.query_params)):
        if request.query_params.get("range") != "custom":
            problems[name] = [f"Give {name} only with range=custom; this range sets its own."]
        elif not re.fullmatch(ISO_MOMENT["pattern"], request.query_params[name]):
            problems[name] = [f"Give {name} as an ISO date or date-time, e.g. 2024-05-01 or 2024-05-01T08:00Z."]
    if problems:
        raise ValidationError(problems)


class DiskViewSet(viewsets.ModelViewSet, TeamViewSet):
    """Disks with their spec and the theoretical limits it gives (Disk.limits())."""

    serializer_class = s.DiskSerializer
    http_method_names = ["get", "post", "patch", "put", "delete", "head", "options"]
    list_parameters = ("host",)

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Disk.objects.none()
        disks = Disk.objects.filter(team=self.team).select_related("host")
        host = self.request.query_params.get("host")
        if self.action == "list" and host:
            disks = disks.filter(host_id=_id(host, "host"))
        return disks

    @extend_schema(parameters=[OpenApiParameter("host", ID_SCHEMA, description="Only this host's disks.")])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    def perform_create(self, serializer: serializers.Serializer) -> None:
        # The identity is asked of the host now; when it cannot answer, identity_note in the answer says why.
        services.identify_new_target(serializer.save(), self.request.user)

    def perform_update(self, serializer: serializers.Serializer) -> None:
        was = serializer.instance.target_path, serializer.instance.kind
        disk = serializer.save()
        if (disk.target_path, disk.kind) != was:
            services.identify_new_target(disk, self.request.user)

    @extend_schema(request=None, responses={200: s.DiskSerializer, 409: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["post"])
    def identity(self, request: Request, pk: str) -> Response:
        """Record what the target is now (WWN, serial, by-id, a loop device's backing file; a directory's
        filesystem UUID): write runs are refused when a different disk sits at the path. Use it after
        replacing the disk on purpose. 409 when the host cannot say (unreachable, the target missing)."""
        disk = self.get_object()
        try:
            services.record_disk_identity(disk, request.user)
        except services.IdentityUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(self.get_serializer(disk).data)

    @extend_schema(parameters=SERIES_PARAMETERS, responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def series(self, request: Request, pk: str) -> HttpResponse:
        """The disk chart's series: successful runs per profile against the disk's limits, downsampled."""
        self.get_object()
        _custom_range_only(request)
        return _delegate(request, chart_views.disk_series, pk)


def _id(value: str, field: str) -> int:
    if not (value.isascii() and value.isdigit()) or not 0 < int(value) <= MAX_ID:
        raise ValidationError({field: [f"{value!r} is not an id; give a whole number such as 3."]})
    return int(value)


class DiskTypeViewSet(TeamViewSet):
    """The disk-type catalog the limits are computed from (read-only)."""

    serializer_class = s.DiskTypeSerializer
    lookup_value_regex = r"[^/]+"

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(limits.disk_types())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(
        responses=s.DiskTypeSerializer,
        parameters=[OpenApiParameter("id", str, OpenApiParameter.PATH, description="e.g. aws-gp3")],
    )
    def retrieve(self, request: Request, pk: str) -> Response:
        found = next((kind for kind in limits.disk_types() if kind.id == pk), None)
        if found is None:
            raise Http404(f"No disk type {pk!r}; GET /api/v1/disk-types/ lists them.")
        return Response(s.DiskTypeSerializer(found).data)


# ----------------------------------------------------------------------------------------- profiles


class ProfileViewSet(viewsets.ModelViewSet, TeamViewSet):
    """Built-in presets (read-only, shared by every team) and the team's own profiles."""

    serializer_class = s.ProfileSerializer
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


# ----------------------------------------------------------------------------------------- schedules


class ScheduleViewSet(viewsets.ModelViewSet, TeamViewSet):
    """Schedules of runs, checked by the same rules as the schedule page."""

    serializer_class = s.ScheduleSerializer
    http_method_names = ["get", "post", "patch", "put", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Schedule.objects.none()
        return Schedule.objects.filter(team=self.team).prefetch_related("targets", "scheduleprofile_set")

    def _set_enabled(self, enabled: bool) -> Response:
        schedule = self.get_object()
        schedule.enabled = enabled
        # Saving resets the dispatcher's bookkeeping: a resumed schedule fires from now on, nothing back-filled.
        schedule.save()
        return Response(self.get_serializer(schedule).data)

    @extend_schema(request=None, responses={200: s.ScheduleSerializer})
    @action(detail=True, methods=["post"])
    def pause(self, request: Request, pk: str) -> Response:
        return self._set_enabled(False)

    @extend_schema(request=None, responses={200: s.ScheduleSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str) -> Response:
        return self._set_enabled(True)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "count",
                {"type": "integer", "minimum": 1, "maximum": NEXT_FIRES_MAX},
                description=f"How many fires, 1 to {NEXT_FIRES_MAX}; default 10.",
            )
        ],
        responses={200: s.NextFiresSerializer},
    )
    @action(detail=True, methods=["get"], url_path="next-fires")
    def next_fires(self, request: Request, pk: str) -> Response:
        """The next fires and, for each, when every (target, profile) run starts."""
        schedule = self.get_object()
        count = request.query_params.get("count", "10")
        if not (count.isascii() and count.isdigit()) or not 1 <= int(count) <= NEXT_FIRES_MAX:
            raise ValidationError({"count": [f"Give a whole number from 1 to {NEXT_FIRES_MAX}."]})
        fires = scheduling.next_fires(schedule.rule(), timezone.now(), int(count)) if schedule.enabled else []
        plan = dispatcher.plan(schedule)
        body = {
            "fires": [
                {
                    "at": fire,
                    "runs": [
                        {
                            "disk": p.disk.pk,
                            "profile": p.profile.pk,
                            "offset_s": p.offset_s,
                            "start": fire + timedelta(seconds=p.offset_s),
                        }
                        for p in plan
                    ],
                }
                for fire in fires
            ]
        }
        return Response(s.NextFiresSerializer(body).data)


# ----------------------------------------------------------------------------------------- runs


class RunFilter(serializers.Serializer):
    disk = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    host = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    profile = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    state = serializers.MultipleChoiceField(choices=Run.State.choices, required=False, help_text="Repeat for several.")
    trigger = serializers.ChoiceField(choices=Run.Trigger.choices, required=False)
    created_after = serializers.DateTimeField(required=False)
    created_before = serializers.DateTimeField(required=False)
    finished_after = serializers.DateTimeField(required=False)
    finished_before = serializers.DateTimeField(required=False)

    LOOKUPS = {
        "disk": "disk_id",
        "host": "disk__host_id",
        "profile": "profile_id",
        "state": "state__in",
        "trigger": "trigger",
        "created_after": "created_at__gte",
        "created_before": "created_at__lt",
        "finished_after": "finished_at__gte",
        "finished_before": "finished_at__lt",
    }

    def apply(self, runs: QuerySet) -> QuerySet:
        # An absent multiple-choice parameter validates as an empty set: no filter, not "no state at all".
        given = {name: value for name, value in self.validated_data.items() if value not in (None, set(), [])}
        return runs.filter(**{self.LOOKUPS[name]: value for name, value in given.items()})


@extend_schema_view(
    list=extend_schema(parameters=[RunFilter]),
    create=extend_schema(request=s.RunRequestSerializer, responses={201: s.RunDetailSerializer}),
)
class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, TeamViewSet):
    """Runs: list with filters, start one now (trigger 'api'), cancel, and read the result."""

    pagination_class = NewestFirst
    list_parameters = tuple(RunFilter().fields)

    def get_serializer_class(self) -> type[serializers.Serializer]:
        return s.RunSerializer if self.action == "list" else s.RunDetailSerializer

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Run.objects.none()
        runs = Run.objects.filter(team=self.team)
        if self.action == "list":
            filters = RunFilter(data=self.request.query_params)
            filters.is_valid(raise_exception=True)
            # Plain values, not model instances through RunSerializer: see serializers.RUN_LIST_COLUMNS.
            return filters.apply(runs).values(*s.RUN_LIST_COLUMNS.values())
        return runs.select_related("disk", "created_by")

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([s.run_list_item(row) for row in page])

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = s.RunRequestSerializer(data=request.data, context=self.get_serializer_context())
        body.is_valid(raise_exception=True)
        data = body.validated_data
        run = services.request_run(data["disk"], data["profile"], trigger=Run.Trigger.API, user=request.user)
        return Response(s.RunDetailSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: s.RunDetailSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        """Pending runs stop at once; running ones are stopped on the host by the next poll."""
        run = services.cancel(self.get_object())
        return Response(s.RunDetailSerializer(run).data)

    @extend_schema(responses={200: s.RunSampleSerializer(many=True)})
    @action(detail=True, methods=["get"], pagination_class=Pagination)
    def samples(self, request: Request, pk: str) -> Response:
        """The run's per-second IOPS, in time order."""
        run = self.get_object()
        page = self.paginate_queryset(run.samples.order_by("t_s"))
        return self.get_paginated_response(s.RunSampleSerializer(page, many=True).data)

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def series(self, request: Request, pk: str) -> HttpResponse:
        """The run chart's data: samples downsampled, the limits, latency percentiles and histogram."""
        self.get_object()
        return _delegate(request, chart_views.run_series, pk)


# ----------------------------------------------------------------------------------------- import


class ImportViewSet(TeamViewSet):
    """Import existing fio or ndisk64 output as finished runs of a disk."""

    serializer_class = s.ImportSerializer
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    @extend_schema(
        request={"application/json": s.ImportSerializer, "multipart/form-data": s.ImportSerializer},
        responses={200: s.ImportResultSerializer, 201: s.ImportResultSerializer},
    )
    def create(self, request: Request) -> Response:
        """Parse the output (JSON `text`, or multipart `files`); with dry_run, store nothing and show the numbers."""
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        parsed, problems = [], []
        for name, text in data["sources"]:
            try:
                result = services.parse_import(text, data["tool"])
            except ParseError as exc:
                problems.append(f"{name}: {exc}")
                continue
            parsed.append(
                {"name": name, "format": result.format, "summary": result.summary, "job_errors": result.job_errors}
            )
        if problems:
            raise ValidationError({"files" if data.get("files") else "text": problems})
        runs: list[Run] = []
        if not data["dry_run"]:
            with transaction.atomic():
                runs = [
                    services.import_result(
                        data["disk"], text, name=name, at=data.get("finished_at"), user=request.user, tool=data["tool"]
                    )
                    for name, text in data["sources"]
                ]
        result = {"dry_run": data["dry_run"], "parsed": parsed, "runs": runs}
        code = status.HTTP_200_OK if data["dry_run"] else status.HTTP_201_CREATED
        return Response(s.ImportResultSerializer(result).data, status=code)


# ----------------------------------------------------------------------------------------- teams


class TeamListViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TeamViewSet):
    """The teams you are in, your role in each, and which one this request acts in."""

    serializer_class = s.TeamSerializer

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Team.objects.none()
        mine = Membership.objects.filter(user=self.request.user, team=OuterRef("pk"))
        teams_of_user = Team.objects.filter(memberships__user=self.request.user)
        return teams_of_user.annotate(my_role=Subquery(mine.values("role")[:1])).order_by("name")


class MemberViewSet(viewsets.ModelViewSet, TeamViewSet):
    """Members of the current team. Owners invite people by username or email, change roles and remove them."""

    change_role = Membership.Role.OWNER
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_serializer_class(self) -> type[serializers.Serializer]:
        return s.InviteSerializer if self.action == "create" else s.MemberSerializer

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Membership.objects.none()
        return Membership.objects.filter(team=self.team).select_related("user").order_by("created_at", "pk")

    @extend_schema(responses={202: s.InvitedSerializer}, summary="Invite someone (they join when they accept)")
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Invite whoever has this username or email; the answer is the same whether or not such an account exists."""
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            invitation = teams.invite(self.team, request.user, body.validated_data["user"], body.validated_data["role"])
        except teams.MembershipRefused as exc:
            raise ValidationError({"user": [str(exc)]}) from exc
        answer = {"detail": teams.invited_message(invitation), "invited_as": invitation.invited_as,
                  "role": invitation.role, "expires_at": invitation.expires_at}  # fmt: skip
        return Response(s.InvitedSerializer(answer).data, status=status.HTTP_202_ACCEPTED)

    def perform_update(self, serializer: serializers.Serializer) -> None:
        before = serializer.instance.role
        membership = serializer.save()
        if membership.role != before:
            audit.record(self.team, self.request.user, AuditEvent.Action.MEMBER_ROLE_CHANGED, membership,
                         member=membership.user.get_username(), role_from=before, role_to=membership.role)  # fmt: skip

    def perform_destroy(self, membership: Membership) -> None:
        if membership.role == Membership.Role.OWNER:
            try:
                s.last_owner_guard(membership)
            except ValidationError as exc:
                raise ValidationError({"detail": s.LAST_OWNER}) from exc
        audit.record(self.team, self.request.user, AuditEvent.Action.MEMBER_REMOVED, membership,
                     member=membership.user.get_username(), role=membership.role)  # fmt: skip
        membership.delete()
