"""The API's sets of runs (sweeps, latency-target searches, synchronised groups, group-size sweeps): list (filtered
by kind, state, disk; paged), detail with the plan, the members and the result (a sweep's curves drawn again under
other knee thresholds on request), start one (trigger 'api': a set profile on one `disk`, or one profile on several
`disks` as a group, with the backend's caps, or as a group-size sweep, with its sizes) and cancel one (every
member). The CSV of a set's points is with the other downloads (jobs/exports/api.py)."""

from __future__ import annotations

import math
import re
from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import QueryDict
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import mixins, serializers
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from jobs import links
from jobs.analysis import curves, stats
from jobs.api import idempotency
from jobs.api.base import MAX_ID, TeamScoped, TeamViewSet, team_of
from jobs.api.pagination import ALWAYS_ALLOWED, NewestFirst
from jobs.models import Disk, Profile, Run, RunSet
from jobs.results.stats import StatsError
from jobs.sets import cancelling, comparing, reading, requesting
from jobs.tools import sweep_plan

AXIS_FIELDS = list(sweep_plan.KINDS)
POINT_SCHEMA = {
    "type": "object",
    "properties": {field: {"type": "integer"} for field in [*AXIS_FIELDS, "rate_iops"]},
    "additionalProperties": False,
    "description": "The fields this point sets on the base profile: a sweep's iodepth, jobs, block_size_bytes, "
    "read_percent; a latency-target search's step, rate_iops (fio's cap).",
}


@extend_schema_field(POINT_SCHEMA)
class PointField(serializers.JSONField):
    """A sweep point: {field: value}, the axes' fields in their order (the first outer)."""


class PlanAxisSerializer(serializers.Serializer):
    field = serializers.ChoiceField(choices=AXIS_FIELDS, help_text="The profile field this axis varies.")
    values = serializers.ListField(child=serializers.IntegerField(), help_text="Its values, in the order they run.")


class SetPlanSerializer(serializers.Serializer):
    axes = PlanAxisSerializer(many=True, help_text="One or two, the first outer.")
    points = serializers.ListField(child=PointField(), help_text="Every point, in the order they run.")
    count = serializers.IntegerField(help_text="How many points.")
    seconds_per_point = serializers.IntegerField(help_text="Ramp plus runtime of one point.")
    total_s = serializers.IntegerField(help_text="The points' time together: count x seconds_per_point.")
    text = serializers.CharField(help_text="'9 points × (5 s ramp + 1 min) = 9 min 45 s'.")


class GroupPlanSerializer(serializers.Serializer):
    """A group's plan as stored when it was made (RunSet.plan), with its count and words."""

    disks = serializers.ListField(child=serializers.IntegerField(), help_text="The members' disks, in member order.")
    cap_iops = serializers.FloatField(
        required=False, help_text="The backend's cap, IOPS, where the team set one (e.g. a cluster's QoS total)."
    )
    cap_mb_s = serializers.FloatField(required=False, help_text="The backend's cap, MB/s (10⁶ bytes), likewise.")
    synchronised_by = serializers.ChoiceField(
        choices=RunSet.SYNCHRONISED_BY,
        required=False,
        help_text="fio: the members were started by fio's own client/server mode. Absent: benchweb's shared instant.",
    )
    count = serializers.IntegerField(help_text="How many members.")
    text = serializers.CharField(help_text="'3 members, one a disk, started at one instant'.")


class GroupSizesPlanSerializer(serializers.Serializer):
    """A group-size sweep's plan as stored when it was made (RunSet.plan), with its member runs and words. Told
    from a group's plan by its `sizes` (and `members` where a group's has `count`)."""

    disks = serializers.ListField(
        child=serializers.IntegerField(), help_text="Its disks in member order: a size of k members runs the first k."
    )
    sizes = serializers.ListField(
        child=serializers.IntegerField(), help_text="The group sizes in the order they run, the last the disks'."
    )
    members = serializers.IntegerField(help_text="How many member runs: the sizes added up (1, 2, 3: 6).")
    text = serializers.CharField(help_text="'3 group sizes (1, 2, 3 members) on 3 disks: 6 member runs, …'.")


class SweepPointSerializer(serializers.Serializer):
    """One point of a sweep as its result holds it (jobs/sets/summary.py point_numbers): null where the point did
    not succeed or its tool did not report the figure, never a guess."""

    index = serializers.IntegerField(help_text="The point's place in the sweep, from 0.")
    point = PointField()
    run = serializers.IntegerField(help_text="The member run's id.")
    state = serializers.ChoiceField(choices=Run.State.choices, help_text="The member run's state.")
    iops = serializers.FloatField(allow_null=True, help_text="Total IOPS.")
    bw_bytes_per_s = serializers.FloatField(allow_null=True, help_text="Total bandwidth, bytes per second.")
    p50_us = serializers.FloatField(allow_null=True, help_text="Completion latency, µs, of the worse direction.")
    p99_us = serializers.FloatField(allow_null=True, help_text="As p50_us, the 99th percentile.")
    p99_9_us = serializers.FloatField(allow_null=True, help_text="As p50_us, the 99.9th percentile.")
    limit_iops = serializers.FloatField(
        allow_null=True, help_text="The disk's baseline limit at the point's block size."
    )
    burst_iops = serializers.FloatField(allow_null=True, help_text="Its burst limit there.")
    block_size_bytes = serializers.IntegerField(allow_null=True)


class KneeSerializer(serializers.Serializer):
    axis = serializers.FloatField(help_text="The knee's value of the load axis (QD 16: 16).")
    iops = serializers.FloatField()
    p99_us = serializers.FloatField(allow_null=True)
    run = serializers.IntegerField(help_text="The member run measured there.")
    index = serializers.IntegerField(help_text="Its point's index.")


class SweepCurveSerializer(serializers.Serializer):
    split = serializers.DictField(
        child=serializers.IntegerField(), help_text="The other axis's value this curve is drawn at; {} for one axis."
    )
    # The serializer metaclass moves declared fields out of the class, so this does not shadow Field.label.
    label = serializers.CharField(  # type: ignore[assignment]
        help_text="The split in words ('block size 64k'); empty for one axis."
    )
    knee = KneeSerializer(allow_null=True, help_text="null: no knee (knee_text says why).")
    knee_text = serializers.CharField(help_text="'knee at QD 16: 18,900 IOPS, p99 1.2 ms' or 'no knee: ' and why.")
    limit_axis = serializers.FloatField(allow_null=True, help_text="Where the vendor's limit was reached; null: not.")
    limit_text = serializers.CharField(allow_blank=True, help_text="That in words; empty when it was not reached.")


class KneeRuleSerializer(serializers.Serializer):
    iops_growth = serializers.FloatField(help_text="As a fraction: 0.1 is 10 %.")
    p99_growth = serializers.FloatField(help_text="As a fraction: 0.5 is 50 %.")


class SearchStepSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="The step's place in the search, from 0.")
    run = serializers.IntegerField()
    state = serializers.ChoiceField(choices=Run.State.choices)
    rate_iops = serializers.IntegerField(allow_null=True, help_text="fio's rate_iops cap; null: unthrottled.")
    iops = serializers.FloatField(allow_null=True)
    latency_us = serializers.FloatField(allow_null=True, help_text="The chosen percentile, worse direction, in µs.")
    verdict = serializers.CharField(allow_null=True)


class SearchAnswerSerializer(serializers.Serializer):
    iops = serializers.FloatField(allow_null=True)
    rate_iops = serializers.IntegerField(allow_null=True)
    run = serializers.IntegerField(allow_null=True)
    latency_us = serializers.FloatField(allow_null=True)
    percentile = serializers.CharField()
    target_us = serializers.IntegerField()
    within_iops = serializers.FloatField(allow_null=True)
    why = serializers.CharField(allow_blank=True, allow_null=True)


class SweepResultSerializer(serializers.Serializer):
    """A sweep's result; a latency-target search's has no knee rule, and its steps and answer besides."""

    points = SweepPointSerializer(many=True)
    axis = serializers.ChoiceField(
        choices=["iodepth", "jobs"], allow_null=True, help_text="The load axis the curves run along; null: no curve."
    )
    rule = KneeRuleSerializer(required=False, help_text="A sweep: the knee's thresholds applied.")
    rule_text = serializers.CharField(required=False, help_text="A sweep: the knee's rule in words.")
    curves = SweepCurveSerializer(many=True, help_text="One per value of the other axis.")
    percentile = serializers.CharField(required=False, help_text="A search: the percentile held to its target.")
    target_us = serializers.IntegerField(required=False, help_text="A search: the target, in µs.")
    steps = SearchStepSerializer(many=True, required=False, help_text="A search: every step so far.")
    answer = SearchAnswerSerializer(required=False, allow_null=True, help_text="A search: its answer once found.")
    answer_text = serializers.CharField(required=False, allow_blank=True, help_text="'14,150 IOPS at p99 ≤ 1 ms'.")


class GroupMemberResultSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="'member 2'.")
    run = serializers.IntegerField(help_text="The member run's id.")
    disk = serializers.CharField(help_text="Its disk's label.")
    host = serializers.CharField(help_text="Its host's name.")
    state = serializers.ChoiceField(choices=Run.State.choices)
    started_at = serializers.CharField(allow_null=True, help_text="Its measured start (its host's clock), ISO 8601.")
    started_epoch = serializers.FloatField(allow_null=True, help_text="The same, in seconds since the epoch.")


def _part(help_text: str) -> serializers.DictField:
    """A part of a group's result: an object whose keys its help names (group_result.py owns their detail)."""
    return serializers.DictField(required=False, help_text=help_text)


class GroupResultSerializer(serializers.Serializer):
    """A synchronised group's result (jobs/sets/group_result.py; docs/user-guide/groups.md has the rules), stored when
    the group ended; null until then. Counted over the members that succeeded; a number their data cannot give is
    null with the reason (`why`), never estimated. Without a member that succeeded, only members, offsets and why."""

    members = GroupMemberResultSerializer(many=True, help_text="Every member, in member order, with its start.")
    offsets = serializers.CharField(
        help_text="How the hosts' clocks were put on one clock (not measured yet: says so)."
    )
    why = serializers.CharField(required=False, help_text="Why the group has no numbers, when it has none.")
    start_spread = _part(
        "{spread_s, uncertainty_s, first, last, text}: the latest start minus the earliest, with the members that "
        "started first and last, and 'started within 0.08 s ± 0.01 s'."
    )
    windows = _part(
        "{all_running, span: {start, end, seconds} or null, last_started, first_done, last_done}: the window every "
        "member ran in, and the first start to the last end (epoch seconds)."
    )
    totals = _part(
        "{all_running, whole_runs, span}: each {what, window, iops, bytes_per_s, members: {name: rates}, why}: the "
        "total while every member ran, the members' whole runs summed, and over the span."
    )
    per_second = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="The members' per-second samples added up on the common clock, one object a second.",
    )
    per_second_note = serializers.CharField(required=False, help_text="What the per-second series leaves out.")
    latency = _part(
        "{read, write}: the percentiles merged from the members' json+ bins, or each member's own with the worst "
        "and the median, labelled not merged."
    )
    comparison = _part("The members side by side: the slowest, the worst p99, the spread of their IOPS.")


class GroupSizeRunSerializer(serializers.Serializer):
    run = serializers.IntegerField(help_text="The member run's id.")
    disk = serializers.CharField(help_text="Its disk's label.")
    host = serializers.CharField(help_text="Its host's name.")
    state = serializers.ChoiceField(choices=Run.State.choices)


class GroupSizeSerializer(serializers.Serializer):
    """One size of a group-size sweep (jobs/sets/group_sizes_result.py): its numbers once every member succeeded,
    else null with `why`."""

    number = serializers.IntegerField(help_text="Its place among the sizes, from 1.")
    members = serializers.IntegerField(help_text="How many members it runs: the sweep's first that many disks.")
    state = serializers.ChoiceField(
        choices=[*Run.State.values, "waiting"],
        help_text="succeeded when every member did; waiting (none started) or running until they end; else the "
        "state of its first member that did not succeed.",
    )
    runs = GroupSizeRunSerializer(many=True, help_text="Its members, in member order.")
    total_iops = serializers.FloatField(
        allow_null=True,
        help_text="The group's total IOPS while every member ran (from the last start to the first end).",
    )
    member_iops = serializers.ListField(
        child=serializers.FloatField(), help_text="Each member's IOPS over that window, in member order; [] uncounted."
    )
    mean_iops = serializers.FloatField(allow_null=True, help_text="The members' mean over the window.")
    min_iops = serializers.FloatField(allow_null=True, help_text="The lowest member's.")
    max_iops = serializers.FloatField(allow_null=True, help_text="The highest member's.")
    window_s = serializers.FloatField(allow_null=True, help_text="The window's length, seconds.")
    spread = serializers.CharField(allow_null=True, help_text="Its start spread: 'started within 0.08 s ± 0.01 s'.")
    why = serializers.CharField(allow_null=True, help_text="Why it has no numbers; null when it has them.")


class GroupSaturationSerializer(serializers.Serializer):
    members = serializers.IntegerField(
        allow_null=True, help_text="The size from which adding members stopped adding IOPS; null: none found."
    )
    text = serializers.CharField(
        help_text="Why, either way: 'from 4 members (36k IOPS, …) on, no larger group gave …'."
    )
    gain_per_doubling = serializers.FloatField(help_text="The threshold applied, a fraction: 0.1 is 10 % a doubling.")
    left_out = serializers.ListField(
        child=serializers.IntegerField(), help_text="The sizes (their members) without numbers, left out of the curve."
    )


class GroupSizesResultSerializer(serializers.Serializer):
    """A group-size sweep's result: each size's numbers and where adding members stopped adding IOPS. Stored when the
    sweep ended; until then drawn from its members so far."""

    sizes = GroupSizeSerializer(many=True, help_text="Every size, in the order they run.")
    saturation = GroupSaturationSerializer(help_text="Over the sizes with numbers (docs/user-guide/groups.md).")


SET_PLAN = PolymorphicProxySerializer(
    component_name="SetDetailPlan",
    serializers=[SetPlanSerializer, GroupPlanSerializer, GroupSizesPlanSerializer],
    resource_type_field_name=None,
    allow_null=True,
)
SET_RESULT = PolymorphicProxySerializer(
    component_name="SetDetailResult",
    serializers=[SweepResultSerializer, GroupResultSerializer, GroupSizesResultSerializer],
    resource_type_field_name=None,
    allow_null=True,
)


class SetMemberSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    index = serializers.IntegerField(source="set_index", help_text="Its place in the set, from 0.")
    point = PointField(source="set_point")
    point_text = serializers.SerializerMethodField(help_text="'iodepth 16, block size 64k'.")
    state = serializers.ChoiceField(choices=Run.State.choices)
    explanation = serializers.CharField()
    disk = serializers.IntegerField(source="disk_id", help_text="Its disk's id (a group's members: one each).")
    disk_label = serializers.CharField(source="disk.label")
    host = serializers.IntegerField(source="disk.host_id", help_text="Its disk's host's id.")
    host_name = serializers.CharField(source="disk.host.name")
    url = serializers.SerializerMethodField(help_text="The run in the API.")

    def get_point_text(self, run: Run) -> str:
        return sweep_plan.point_text(run.set_point or {}, str((run.parameters or {}).get("tool", "fio")))

    def get_url(self, run: Run) -> str:
        return links.absolute(reverse("api-run-detail", kwargs={"pk": run.pk}), self.context.get("request"))


class SetSerializer(serializers.ModelSerializer):
    host = serializers.IntegerField(source="disk.host_id", read_only=True)
    created_by: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    final = serializers.BooleanField(source="is_final", read_only=True)
    points = serializers.SerializerMethodField(
        help_text="How many points (member runs) a sweep has; a group: how many members; a group-size sweep: how "
        "many member runs, its sizes added up."
    )

    class Meta:
        model = RunSet
        fields = [
            "id", "uuid", "kind", "disk", "host", "profile", "profile_name", "schedule", "fire_time", "trigger",
            "state", "final", "explanation", "on_failure", "cancel_requested", "created_by", "created_at",
            "started_at", "finished_at", "points",
        ]  # fmt: skip
        read_only_fields = fields

    def get_points(self, run_set: RunSet) -> int:
        plan = run_set.plan if isinstance(run_set.plan, dict) else {}
        if run_set.kind == RunSet.Kind.GROUP_SIZES:
            return sum(int(size) for size in plan.get("sizes") or [])
        return len(plan.get("disks" if run_set.kind == RunSet.Kind.GROUP else "points") or [])


class SetDetailSerializer(SetSerializer):
    plan = serializers.SerializerMethodField(
        help_text="A sweep's axes, points and time; a group's disks and caps; a group-size sweep's disks and sizes; "
        "as planned when made. null: a search."
    )
    members = serializers.SerializerMethodField(
        help_text="The member runs in the order they run (a group: member order)."
    )
    result = serializers.SerializerMethodField(
        help_text="A sweep's points with their numbers, its curves along the load axis with their knees and the "
        "vendor's limit, in numbers and words. Stored when the set ended; until then drawn from the points that "
        "ended so far. ?iops_growth= and ?p99_growth= draw the curves again under those thresholds. A group's: "
        "its start spread, windows, totals, per-second series, latency and comparison, once it ended (null before). A "
        "group-size sweep's: each size's total and per-member IOPS and where adding members stopped adding IOPS "
        "(stored when it ended; until then drawn from its members so far)."
    )

    class Meta(SetSerializer.Meta):
        fields = [*SetSerializer.Meta.fields, "base_parameters", "plan", "members", "result"]
        read_only_fields = fields

    def _members(self, run_set: RunSet) -> list[Run]:
        found = self.context.get("members")
        return found if found is not None else reading.members(run_set)

    @extend_schema_field(SET_PLAN)
    def get_plan(self, run_set: RunSet) -> dict[str, Any] | None:
        if run_set.kind == RunSet.Kind.GROUP:
            return reading.group_plan(run_set)
        if run_set.kind == RunSet.Kind.GROUP_SIZES:
            return reading.group_sizes_plan(run_set)
        plan = reading.stored_plan(run_set)
        if plan is None:
            return None
        return {**requesting.plan_json(plan), "count": plan.count, "text": sweep_plan.plan_text(plan)}

    @extend_schema_field(SetMemberSerializer(many=True))
    def get_members(self, run_set: RunSet) -> list[dict[str, Any]]:
        return list(SetMemberSerializer(self._members(run_set), many=True, context=self.context).data)

    @extend_schema_field(SET_RESULT)
    def get_result(self, run_set: RunSet) -> dict[str, Any] | None:
        if run_set.kind == RunSet.Kind.GROUP_SIZES:
            return reading.group_sizes_result_of(run_set, self._members(run_set))
        if run_set.kind != RunSet.Kind.SWEEP:
            return run_set.result
        return reading.result_of(run_set, self._members(run_set), self.context.get("rule"))


@extend_schema_field({"type": "number", "format": "double", "minimum": 0, "exclusiveMinimum": True})
class CapField(serializers.FloatField):
    """A backend's cap: a number above 0 (anything else is refused by requesting.group_caps, naming the field)."""


# The kinds of set started on `disks`; the others are started on one `disk`.
ON_DISKS = RunSet.TOGETHER_KINDS


class SetRequestSerializer(serializers.Serializer):
    """A sweep or a latency-target search on one `disk`, or a group (or a group-size sweep) of one profile on
    `disks`: exactly one of the two. The disks are resolved in the order given, each refused naming its member."""

    kind = serializers.ChoiceField(
        choices=RunSet.Kind.choices,
        required=False,
        help_text="Optional: group_sizes for a group-size sweep over `disks` (the group of the first k disks for "
        "each of `sizes`). Left out: `disk` starts the profile's kind of set (sweep or sla), `disks` a group. Given, "
        "it must be the kind the request makes.",
    )

    disk = TeamScoped(
        queryset=Disk.objects.select_related("host", "team"),
        required=False,
        help_text="A sweep's or a latency-target search's disk. Give disk or disks, not both.",
    )
    disks = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        help_text=f"A synchronised group: its members' disks, in member order, {requesting.GROUP_MIN_MEMBERS} to "
        f"{requesting.GROUP_MAX_MEMBERS} of your team's, started at one instant.",
    )
    profile = TeamScoped(
        queryset=Profile.objects.all(),
        presets=True,
        help_text="With disk: a set profile (sweep_axes or sla_target_us). With disks: a single-run profile.",
    )
    cap_iops = CapField(
        required=False,
        help_text="A group only, optional: the backend's cap in IOPS where the team sets one (e.g. a cluster's QoS "
        "total), above 0; stored as plan.cap_iops.",
    )
    cap_mb_s = CapField(
        required=False,
        help_text="A group only, optional: the backend's cap in MB/s (10⁶ bytes a second), above 0; plan.cap_mb_s.",
    )
    synchronised_by = serializers.ChoiceField(
        choices=RunSet.SYNCHRONISED_BY,
        required=False,
        help_text="A group only, optional: benchweb (the default: each member's host waits for one shared start "
        "instant, the spread measured) or fio (fio's own client/server mode: fio's server on each member behind the "
        "same safety checks, driven by fio's client on a worker, which needs the members' fio release).",
    )
    sizes = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=requesting.GROUP_MAX_MEMBERS),
        max_length=requesting.GROUP_MAX_MEMBERS,
        required=False,
        help_text="A group-size sweep only, optional: the group sizes, at least two, growing, the last the number of "
        "disks, e.g. [1, 2, 3]. Left out: 1, 2, 4, … ending at the number of disks.",
    )

    def validate_disks(self, ids: list[int]) -> list[Disk]:
        mine = Disk.objects.filter(team=team_of(self), pk__in=ids).select_related("host", "team")
        found = {disk.pk: disk for disk in mine}
        if missing := [f"member {n} (disk {pk})" for n, pk in enumerate(ids, 1) if pk not in found]:
            raise serializers.ValidationError(
                f"{', '.join(missing)}: no disk of your team has that id; choose your team's disks "
                "(GET /api/v1/disks/). Nothing was started."
            )
        return [found[pk] for pk in ids]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        kind = attrs.get("kind")
        if ("disk" in attrs) == ("disks" in attrs):
            field = "disks" if "disk" in attrs or kind in ON_DISKS else "disk"
            raise ValidationError({field: [
                "Give disk (one disk: a sweep or a latency-target search) or disks (2 to 100 disks: a group or a "
                "group-size sweep), exactly one of them."
            ]})  # fmt: skip
        if kind is not None and (kind in ON_DISKS) != ("disks" in attrs):
            needed, given = ("disks", "disk") if kind in ON_DISKS else ("disk", "disks")
            raise ValidationError({needed: [
                f"A {RunSet.Kind(kind).label.lower()} is started with {needed}, not {given}: give {needed} in place "
                f"of {given}, or leave kind out."
            ]})  # fmt: skip
        if "disk" in attrs and (caps := sorted(set(attrs) & set(requesting.GROUP_CAPS))):
            raise ValidationError({caps[0]: [f"Only a group takes a backend cap: give disks, or leave {caps[0]} out."]})
        if kind == RunSet.Kind.GROUP_SIZES and (caps := sorted(set(attrs) & set(requesting.GROUP_CAPS))):
            raise ValidationError({caps[0]: [
                f"A group-size sweep takes no backend cap (its curve shows where the backend stops giving more): "
                f"leave {caps[0]} out, or start a group."
            ]})  # fmt: skip
        if "synchronised_by" in attrs and ("disk" in attrs or kind == RunSet.Kind.GROUP_SIZES):
            raise ValidationError({"synchronised_by": [
                "Only a group takes synchronised_by: give disks without kind group_sizes, or leave it out."
            ]})  # fmt: skip
        if "sizes" in attrs and kind != RunSet.Kind.GROUP_SIZES:
            raise ValidationError({"sizes": ['Only a group-size sweep takes sizes: give "kind": "group_sizes", or '
                                             "leave sizes out."]})  # fmt: skip
        return attrs


class SetFilter(serializers.Serializer):
    disk = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    state = serializers.MultipleChoiceField(
        choices=RunSet.State.choices, required=False, help_text="Repeat for several."
    )
    kind = serializers.ChoiceField(choices=RunSet.Kind.choices, required=False)

    LOOKUPS = {"disk": "disk_id", "state": "state__in", "kind": "kind"}

    def apply(self, sets: QuerySet) -> QuerySet:
        # An absent multiple-choice parameter validates as an empty set: no filter, not "no state at all".
        given = {name: value for name, value in self.validated_data.items() if value not in (None, set(), [])}
        return sets.filter(**{self.LOOKUPS[name]: value for name, value in given.items()})


# The knee's thresholds a request may set, in percent, with their bounds and defaults.
KNEE_LOW, KNEE_HIGH = 0.1, 1000.0
KNEE_THRESHOLDS = {"iops_growth": curves.IOPS_GROWTH, "p99_growth": curves.P99_GROWTH}
KNEE_PARAMETERS = [
    OpenApiParameter(
        name,
        {"type": "number", "minimum": KNEE_LOW, "maximum": KNEE_HIGH},
        description=f"Percent (default {default * 100:g}): draw the curves again with this knee threshold "
        f"({'IOPS gained after the knee less than this' if name == 'iops_growth' else 'p99 rising more than this'}).",
    )
    for name, default in KNEE_THRESHOLDS.items()
]
COMPARE_PARAMETERS = [
    OpenApiParameter("a_disk", int, description="Disk A's id (with b_disk)."),
    OpenApiParameter("b_disk", int, description="Disk B's id (with a_disk)."),
    OpenApiParameter("disk", int, description="One disk's id, its sweeps before against after split."),
    OpenApiParameter("split", str, description="With disk: an ISO date (its midnight in UTC) or date-time."),
    OpenApiParameter("profile", str, description="The sweep profile's name; default: the one the disks share."),
    OpenApiParameter("test", str, enum=list(stats.TESTS), description="mann-whitney (default) or welch."),
]
_NUMBER = re.compile(r"[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+\.")


def knee_rule(query: QueryDict) -> curves.Rule | None:
    """The knee rule the query asks for (?iops_growth=10&p99_growth=50, percent); None: the default's. A value
    that is not one number within the bounds is refused naming its parameter."""
    given: dict[str, float] = {}
    problems = {}
    for name, default in KNEE_THRESHOLDS.items():
        values = query.getlist(name)
        if not values:
            continue
        number = float(values[0]) if len(values) == 1 and _NUMBER.fullmatch(values[0]) else math.nan
        if not KNEE_LOW <= number <= KNEE_HIGH:
            got = ", ".join(repr(v[:40]) for v in values)
            problems[name] = [
                f"Give {name} once, as a percentage from {KNEE_LOW:g} to {KNEE_HIGH:g}, e.g. {default * 100:g} "
                f"(the default); got {got}."
            ]
        given[name] = number / 100
    if problems:
        raise ValidationError(problems)
    return curves.Rule(**given) if given else None


@extend_schema_view(
    list=extend_schema(parameters=[SetFilter]),
    retrieve=extend_schema(parameters=KNEE_PARAMETERS),
    create=extend_schema(
        request=SetRequestSerializer, responses={201: SetDetailSerializer}, parameters=idempotency.PARAMETERS
    ),
)
class RunSetViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, TeamViewSet):
    """Sets of runs (sweeps, latency-target searches, groups, group-size sweeps): list with filters, start one now
    (trigger 'api'), cancel every member, and read the result."""

    pagination_class = NewestFirst
    list_parameters = tuple(SetFilter().fields)

    def get_serializer_class(self) -> type[serializers.Serializer]:
        return SetSerializer if self.action == "list" else SetDetailSerializer

    def get_queryset(self) -> QuerySet:
        if self.fake:
            return RunSet.objects.none()
        sets = RunSet.objects.filter(team=self.team).select_related("disk", "created_by")
        if self.action == "list":
            filters = SetFilter(data=self.request.query_params)
            filters.is_valid(raise_exception=True)
            return filters.apply(sets)
        return sets

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        allowed = tuple(KNEE_THRESHOLDS)
        unknown = sorted(set(request.query_params) - {*allowed, *ALWAYS_ALLOWED})
        if unknown:
            raise ValidationError(
                {name: [f"This takes no {name!r} parameter; it takes: {', '.join(allowed)}."] for name in unknown}
            )
        rule = knee_rule(request.query_params)
        run_set = self.get_object()
        return Response(self._detail(run_set, rule=rule))

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Start a set now (trigger `api`). Sent again with the same `Idempotency-Key` and body, it starts nothing and
        answers the set the key started."""

        def start() -> RunSet:
            body = SetRequestSerializer(data=request.data, context=self.get_serializer_context())
            body.is_valid(raise_exception=True)
            data = body.validated_data
            if "disks" in data:
                return self._start_on_disks(data, request.user)
            return self._start_on_disk(data, request.user)

        return idempotency.create_once(request, self.team, self.get_queryset(), start, self._detail)

    @staticmethod
    def _start_on_disks(data: dict[str, Any], user: Any) -> RunSet:
        """A group-size sweep when the kind asks for one, else a group with the backend's caps."""
        disks, profile = data["disks"], data["profile"]
        if data.get("kind") == RunSet.Kind.GROUP_SIZES:
            return requesting.request_group_sizes(disks, profile, data.get("sizes"), trigger=Run.Trigger.API, user=user)
        caps = {name: data.get(name) for name in requesting.GROUP_CAPS}
        return requesting.request_group(disks, profile, caps, synchronised_by=data.get("synchronised_by", "benchweb"),
                                        trigger=Run.Trigger.API, user=user)  # fmt: skip

    @staticmethod
    def _start_on_disk(data: dict[str, Any], user: Any) -> RunSet:
        """The set profile's own kind of set on the disk: a sweep or a latency-target search."""
        profile = data["profile"]
        if not profile.is_set:
            why = (
                f"{profile.name} is neither a sweep (sweep_axes) nor a latency-target search (sla_target_us): "
                "POST it to /api/v1/runs/ to run it once."
            )
            raise ValidationError({"profile": [why]})
        made = RunSet.Kind.SLA if profile.is_sla else RunSet.Kind.SWEEP
        if data.get("kind", made) != made:
            raise ValidationError({"kind": [
                f"{profile.name} starts a {made.label.lower()} ({made}), not {data['kind']}: give {made}, or leave "
                "kind out."
            ]})  # fmt: skip
        return requesting.request_set(data["disk"], profile, trigger=Run.Trigger.API, user=user)

    @extend_schema(parameters=COMPARE_PARAMETERS, responses={200: OpenApiTypes.OBJECT})
    @action(detail=False, methods=["get"])
    def compare(self, request: Request) -> Response:
        """Sweeps compared curve on curve (jobs/sets/comparing.py): a sweep profile's sweeps on a_disk against
        b_disk, or on disk before against after split; each side's median curve and knee, and every point's IOPS
        and the knees' compared with the statistics of /api/v1/compare/stats/."""
        allowed = tuple(parameter.name for parameter in COMPARE_PARAMETERS)
        unknown = sorted(set(request.query_params) - {*allowed, *ALWAYS_ALLOWED})
        if unknown:
            raise ValidationError(
                {name: [f"This takes no {name!r} parameter; it takes: {', '.join(allowed)}."] for name in unknown}
            )
        try:
            found = comparing.comparison(comparing.parse(request.query_params, self.team))
        except StatsError as exc:
            raise ValidationError({exc.field: [str(exc)]}) from exc
        return Response(found)

    @extend_schema(request=None, responses={200: SetDetailSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        """One cancel for every member: those not started end at once, the running one is stopped on its host;
        the members that finished keep their results."""
        return Response(self._detail(cancelling.cancel(self.get_object())))

    def _detail(self, run_set: RunSet, rule: curves.Rule | None = None) -> dict[str, Any]:
        context = {**self.get_serializer_context(), "members": reading.members(run_set), "rule": rule}
        return dict(SetDetailSerializer(run_set, context=context).data)
