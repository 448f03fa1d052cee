"""The API's schedules, with their plan and next fires."""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from jobs import scheduling
from jobs.api.base import ModelSerializer, TeamScoped, TeamViewSet, team_of
from jobs.api.errors import django_errors
from jobs.models import Disk, Profile, Schedule, ScheduleProfile
from jobs.models.names import name_taken
from jobs.schedules import calendar as schedule_calendar
from jobs.schedules import dispatcher


class OrderedProfiles(serializers.ListField):
    def get_attribute(self, schedule: Schedule) -> list[Any]:
        # Prefetched, in position order: no query per schedule. Only ids are shown, so no profile rows either.
        return [Profile(pk=sp.profile_id) for sp in schedule.scheduleprofile_set.all()]


class OverlapSerializer(serializers.Serializer):
    schedule = serializers.IntegerField(source="schedule_id", help_text="The other schedule's id.")
    schedule_name = serializers.CharField()
    host = serializers.CharField(help_text="The host both schedules run on.")
    first_at = serializers.DateTimeField(source="at", help_text="When the first two overlapping runs both run.")
    runs = serializers.SerializerMethodField(help_text='The two runs, "host:disk profile", this schedule\'s first.')
    message = serializers.SerializerMethodField(help_text="The warning as the schedule page words it (times in UTC).")

    def get_runs(self, overlap: schedule_calendar.Overlap) -> list[str]:
        return [overlap.mine, overlap.theirs]

    def get_message(self, overlap: schedule_calendar.Overlap) -> str:
        return overlap.message(UTC)


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
            "targets", "profiles", "as_group", "next_fire_at", "last_fire_at", "created_at", "warnings",
        ]  # fmt: skip
        read_only_fields = ["next_fire_at", "last_fire_at", "created_at"]

    warnings = serializers.SerializerMethodField(
        help_text="Other enabled schedules whose planned runs overlap this one's on a host in the next 7 days, "
        "each with the first overlapping moment (the calendar flags the same). The save succeeds all the same."
    )

    @extend_schema_field(OverlapSerializer(many=True))
    def get_warnings(self, schedule: Schedule) -> Any:
        known = self.context.get("overlaps")  # a list computes them for all its schedules at once
        found = known.get(schedule.pk, []) if known is not None else schedule_calendar.overlaps(schedule)
        return OverlapSerializer(found, many=True).data

    def validate_name(self, name: str) -> str:
        if name_taken(Schedule.objects.filter(team=team_of(self)), self.instance, name=name):
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
        if problems := dispatcher.group_problems(draft, list(targets), list(profiles)):
            raise serializers.ValidationError(problems)
        if refused := dispatcher.unrunnable(list(targets), list(profiles)):
            raise serializers.ValidationError(
                {"targets": [f"{message} Remove the disk or the profile from this schedule." for message in refused]}
            )
        return attrs

    @transaction.atomic
    def save(self, **kwargs: Any) -> Schedule:
        profiles = self.validated_data.pop("profiles", None)
        schedule = super().save(team=team_of(self), **kwargs)
        if profiles is not None:
            schedule.scheduleprofile_set.all().delete()
            ScheduleProfile.objects.bulk_create(
                ScheduleProfile(schedule=schedule, profile=profile, position=position)
                for position, profile in enumerate(profiles)
            )
        if not schedule.enabled:
            dispatcher.stop_unstarted(schedule)
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


NEXT_FIRES_MAX = 50


class ScheduleViewSet(viewsets.ModelViewSet, TeamViewSet):
    """Schedules of runs, checked by the same rules as the schedule page."""

    serializer_class = ScheduleSerializer
    http_method_names = ["get", "post", "patch", "put", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return Schedule.objects.none()
        return Schedule.objects.filter(team=self.team).prefetch_related("targets", "scheduleprofile_set")

    def get_serializer_context(self) -> dict[str, Any]:
        context = dict(super().get_serializer_context())
        if self.action == "list" and not self.fake:
            context["overlaps"] = schedule_calendar.overlaps_by_schedule(self.team)
        return context

    def _set_enabled(self, enabled: bool) -> Response:
        schedule = self.get_object()
        schedule.enabled = enabled
        with transaction.atomic():
            # Saving resets the dispatcher's bookkeeping: a resumed schedule fires from now on, nothing back-filled.
            schedule.save()
            if not enabled:
                dispatcher.stop_unstarted(schedule)
        return Response(self.get_serializer(schedule).data)

    @extend_schema(request=None, responses={200: ScheduleSerializer})
    @action(detail=True, methods=["post"])
    def pause(self, request: Request, pk: str) -> Response:
        return self._set_enabled(False)

    @extend_schema(request=None, responses={200: ScheduleSerializer})
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
        responses={200: NextFiresSerializer},
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
        return Response(NextFiresSerializer(body).data)
