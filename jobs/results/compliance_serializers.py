"""The shapes of the compliance and stability answers (jobs/results/compliance.py, jobs/results/stability.py), for
the schema: GET /api/v1/disks/{id}/compliance/ and GET /api/v1/disks/{id}/stability/ (jobs/disks/api.py) and the
`stability` object of a run's detail (jobs/runs/api.py); and the query parameters both disk answers take."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from jobs.results import compliance

ISO_MOMENT = {
    "type": "string",
    "pattern": r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$",
}
PARAMETERS = [
    OpenApiParameter(
        "period",
        str,
        enum=list(compliance.PERIODS),
        description=f"The runs of the last 7, 30 or 90 days, or all. Default {compliance.DEFAULT_PERIOD}; not with "
        "since/until.",
    ),
    OpenApiParameter(
        "since", ISO_MOMENT, description="From this ISO date or time (UTC unless it says), instead of a period."
    ),
    OpenApiParameter("until", ISO_MOMENT, description="Before this ISO time; a bare date includes its day."),
    OpenApiParameter("profile", str, description="A profile id or name; none: every profile."),
    OpenApiParameter(
        "tolerance",
        {"type": "number", "minimum": 0, "maximum": 99},
        description=f"Percent below the promise still counted as kept (default {compliance.DEFAULT_TOLERANCE:g}: a "
        "run below 95 % of its limit is a miss).",
    ),
    OpenApiParameter(
        "measured",
        str,
        enum=["all", "disk"],
        description="disk: leave out runs with a verdict against their number (client-bound, cache suspected, …; "
        "runs not judged stay). Default: all.",
    ),
]


class QuerySerializer(serializers.Serializer):
    period = serializers.CharField(help_text="7d, 30d, 90d, all, or custom (since/until).")
    since = serializers.DateTimeField(allow_null=True)
    until = serializers.DateTimeField(allow_null=True)
    profile = serializers.CharField(allow_blank=True)
    tolerance_percent = serializers.FloatField()
    threshold_percent = serializers.FloatField(help_text="The share of its limit a run must reach.")
    measured = serializers.ChoiceField(choices=["all", "disk"], help_text="disk: runs with a verdict were left out.")


class SecondsSerializer(serializers.Serializer):
    seconds = serializers.IntegerField(help_text="Per-second samples read.")
    below = serializers.IntegerField()
    below_share = serializers.FloatField(allow_null=True, help_text="0-1; null without samples.")
    runs = serializers.IntegerField(help_text="Runs whose samples were read.")
    newest_runs_read = serializers.IntegerField(
        help_text=f"The samples come from the period's newest {compliance.SAMPLED_RUNS:,} promised runs at most."
    )


class WorstHourSerializer(serializers.Serializer):
    hour = serializers.IntegerField(help_text="Hour of the day of the runs' finish, 0-23.")
    zone = serializers.CharField()
    mean_efficiency = serializers.FloatField(help_text="Measured IOPS over the limit, averaged over the hour's runs.")
    runs = serializers.IntegerField()


class StreakSerializer(serializers.Serializer):
    runs = serializers.IntegerField(help_text="Consecutive misses; 0 when none.")
    to = serializers.DateTimeField(allow_null=True, help_text="The last miss's finish.")

    def get_fields(self) -> dict[str, serializers.Field]:
        # "from" is a keyword: added by name.
        return {
            "from": serializers.DateTimeField(allow_null=True, help_text="The first miss's finish."),
            **super().get_fields(),
        }


class LimitSerializer(serializers.Serializer):
    iops = serializers.FloatField(help_text="The baseline IOPS at the block size: the promise.")
    block_size_bytes = serializers.IntegerField(allow_null=True)
    record_id = serializers.CharField(allow_blank=True, help_text="The catalog record; empty for limits typed by hand.")
    disk_type = serializers.CharField(allow_blank=True)
    source_url = serializers.CharField(allow_blank=True)
    source_date = serializers.CharField(allow_blank=True, help_text="As the source states it.")
    verified = serializers.BooleanField()
    effective_from = serializers.CharField(allow_null=True)
    from_run = serializers.IntegerField(help_text="The newest promised run of the period, whose snapshot this is.")
    changed = serializers.BooleanField(help_text="A profile's runs had different limits within the period.")


class ProfileComplianceSerializer(serializers.Serializer):
    profile = serializers.CharField()
    runs = serializers.IntegerField()
    below = serializers.IntegerField()
    below_share = serializers.FloatField(allow_null=True)
    no_promise = serializers.IntegerField()


class DiskComplianceSerializer(QuerySerializer):
    runs = serializers.IntegerField(help_text="Succeeded runs of the period measured against a limit.")
    below = serializers.IntegerField(help_text="Of those, the runs below the threshold.")
    below_share = serializers.FloatField(allow_null=True, help_text="below / runs, 0-1; null without runs.")
    no_promise = serializers.IntegerField(help_text="Runs with no IOPS limit, not counted in runs.")
    mean_efficiency = serializers.FloatField(allow_null=True, help_text="Measured IOPS over the limit, on average.")
    first_run_at = serializers.DateTimeField(allow_null=True)
    last_run_at = serializers.DateTimeField(allow_null=True)
    seconds = SecondsSerializer()
    worst_hour = WorstHourSerializer(allow_null=True)
    longest_streak = StreakSerializer()
    limit = LimitSerializer(allow_null=True, help_text="null: no run of the period had a limit.")
    by_profile = ProfileComplianceSerializer(many=True)
    judged_against = serializers.ChoiceField(
        choices=[("baseline", "baseline")],
        help_text="Every run is held against its baseline limit, even when burst credits served it.",
    )


class HeatCellSerializer(serializers.Serializer):
    runs = serializers.IntegerField()
    median_iops = serializers.FloatField(allow_null=True)
    median_p99_us = serializers.FloatField(allow_null=True, help_text="The worse of read and write p99.")
    iops_level = serializers.IntegerField(
        allow_null=True,
        help_text="The cell's runs against their profile's median: 0 as usual or better ... 4 half or less.",
    )
    p99_level = serializers.IntegerField(
        allow_null=True, help_text="The same for p99 latency: 0 as usual or better ... 4 double or more."
    )


class HeatDaySerializer(serializers.Serializer):
    day = serializers.CharField(help_text="Mon ... Sun")
    hours = HeatCellSerializer(many=True, help_text="24 cells, hour 0 first.")


class HeatmapSerializer(QuerySerializer):
    zone = serializers.CharField()
    runs = serializers.IntegerField()
    median_iops = serializers.FloatField(allow_null=True)
    median_p99_us = serializers.FloatField(allow_null=True)
    days = HeatDaySerializer(many=True, help_text="7 days, Monday first.")


class DropSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    disk = serializers.IntegerField()
    disk_label = serializers.CharField()
    host = serializers.IntegerField()
    host_name = serializers.CharField()
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField()
    iops = serializers.FloatField()
    median_iops = serializers.FloatField(help_text="The median of the run's disk x profile over the period.")
    percent_of_median = serializers.FloatField(allow_null=True)


class SharedDropSerializer(serializers.Serializer):
    to = serializers.DateTimeField()
    hosts = serializers.IntegerField()
    drops = DropSerializer(many=True)

    def get_fields(self) -> dict[str, serializers.Field]:
        return {"from": serializers.DateTimeField(), **super().get_fields()}


class SharedDropsSerializer(QuerySerializer):
    zone = serializers.CharField()
    site = serializers.CharField(allow_blank=True)
    dip_percent = serializers.IntegerField(help_text="A drop is a run below this percent of its disk x profile median.")
    why = serializers.CharField(allow_null=True, help_text="Why nothing could be compared (no site); else null.")
    groups = SharedDropSerializer(many=True, help_text="Drops shared by disks on two hosts or more of the site.")


class DiskStabilitySerializer(serializers.Serializer):
    heatmap = HeatmapSerializer()
    shared_drops = SharedDropsSerializer()


class RunStabilitySerializer(serializers.Serializer):
    seconds = serializers.IntegerField(help_text="Per-second samples read.")
    cv = serializers.FloatField(allow_null=True, help_text="Coefficient of variation of per-second IOPS.")
    below_median_share = serializers.FloatField(
        allow_null=True, help_text="Share (0-1) of the seconds below dip_percent of the run's median."
    )
    dip_percent = serializers.IntegerField()
    read_p99_p50 = serializers.FloatField(allow_null=True, help_text="Read completion latency p99 over p50.")
    write_p99_p50 = serializers.FloatField(allow_null=True)
