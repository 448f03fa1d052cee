"""The API's statistics: two sets of runs compared (GET /api/v1/compare/stats/, jobs/results/stats.py) and latency
distributions side by side (GET /api/v1/distributions/, jobs/results/distributions.py), with the shapes of their
answers for the schema. Both read their query where the Compare page does, so the answers agree."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs.analysis import stats as analysis
from jobs.api.auth import access
from jobs.api.permissions import TeamRole
from jobs.disks.api import ISO_MOMENT
from jobs.models import Team
from jobs.results import distributions, stats

IDS = {"type": "string", "pattern": r"^[0-9]+(,[0-9]+)*$"}
ID = {"type": "string", "pattern": r"^[0-9]+$"}


VERDICTS = [
    (analysis.SIGNIFICANT, "a significant difference"),
    (analysis.NOT_SIGNIFICANT, "no significant difference"),
    (analysis.NOT_ENOUGH, "not enough runs to tell"),
]


def _pair(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True, help_text=help_text
    )


class RunSetSerializer(serializers.Serializer):
    label = serializers.CharField(  # type: ignore[assignment]  # a field: the metaclass moves it out of the class
        help_text="'A: <disk>', 'B: <disk>', 'before <moment>' or 'after <moment>'."
    )
    disk = serializers.IntegerField()
    # "from" is a keyword: declared in __init__ below.
    to = serializers.DateTimeField(allow_null=True, help_text="The set's end (exclusive); null: open.")
    runs = serializers.ListField(child=serializers.IntegerField(), help_text="The runs compared, newest first.")
    left_out_unsteady = serializers.IntegerField(help_text="Runs of the set judged not steady and left out.")
    left_out_verdicts = serializers.IntegerField(
        help_text="Runs of the set with a verdict against their number, left out."
    )
    n = serializers.IntegerField()
    median = serializers.FloatField(allow_null=True)
    mean = serializers.FloatField(allow_null=True)

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField(allow_null=True, help_text="The set's start; null: open.")
        return fields


class CompareStatsSerializer(serializers.Serializer):
    metric = serializers.ChoiceField(choices=list(stats.METRICS))
    metric_label = serializers.CharField()
    unit = serializers.CharField(help_text="The unit of every value and difference: IO/s, bytes/s or µs.")
    profile = serializers.CharField(help_text="The profile whose runs are compared (a name).")
    test = serializers.ChoiceField(choices=list(analysis.TESTS))
    skip_unsteady = serializers.BooleanField(help_text="Whether runs judged not steady were left out.")
    skip_verdicts = serializers.BooleanField(help_text="Whether runs with a verdict (client-bound, …) were left out.")
    split = serializers.DateTimeField(allow_null=True, help_text="Before/after: the moment; null for two disks.")
    min_runs = serializers.IntegerField(help_text="Runs each set needs for a test.")
    verdict = serializers.ChoiceField(choices=VERDICTS)
    text = serializers.CharField(help_text="The verdict in words, with p and the CI of the change in percent.")
    a = RunSetSerializer()
    b = RunSetSerializer()
    p_value = serializers.FloatField(allow_null=True, help_text="Two-sided; null when not enough runs.")
    difference = serializers.FloatField(
        allow_null=True,
        help_text="B - A: the Hodges-Lehmann estimate (mann-whitney) or the difference of means (welch).",
    )
    difference_ci = _pair("Its 95 % confidence interval, low and high.")
    percent = serializers.FloatField(allow_null=True, help_text="The difference over A's median (mean for welch).")
    percent_ci = _pair("Its 95 % confidence interval in percent.")
    median_difference = serializers.FloatField(allow_null=True, help_text="B's median - A's median.")
    mean_difference = serializers.FloatField(allow_null=True, help_text="B's mean - A's mean.")
    mean_difference_ci = _pair("Welch's 95 % confidence interval of the difference of means.")


class CdfPointSerializer(serializers.Serializer):
    latency_us = serializers.FloatField()
    percent = serializers.FloatField(help_text="Share of the direction's completions at or below latency_us.")


class HistogramSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    counts = serializers.ListField(child=serializers.IntegerField(), help_text="I/Os per bin of edges_us.")
    percent = serializers.ListField(child=serializers.FloatField())


class DistributionSeriesSerializer(serializers.Serializer):
    label = serializers.CharField()  # type: ignore[assignment]  # as above
    run = serializers.IntegerField()
    disk = serializers.IntegerField()
    profile = serializers.CharField(allow_blank=True)
    direction = serializers.ChoiceField(choices=[("read", "read"), ("write", "write")])
    finished_at = serializers.DateTimeField(allow_null=True)
    source = serializers.ChoiceField(  # type: ignore[assignment]  # as above
        choices=[("percentiles", "the printed percentiles"), ("bins", "json+ latency bins")],
        help_text="percentiles: one CDF point per printed percentile and the max; bins: every json+ bin.",
    )
    percentiles_us = serializers.DictField(child=serializers.FloatField(allow_null=True))
    cdf = CdfPointSerializer(many=True)
    histogram = HistogramSerializer(allow_null=True, help_text="Only where the run has json+ bins.")


class DistributionsSerializer(serializers.Serializer):
    what = serializers.CharField(help_text="What each series is.")
    edges_us = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="The histograms' shared bin edges; null: no bins."
    )
    series = DistributionSeriesSerializer(many=True)
    profile = serializers.CharField(required=False, help_text="Disks only: the profile whose runs are drawn.")
    disks_without_runs = serializers.ListField(
        child=serializers.IntegerField(), required=False, help_text="Disks only: disks with no run of the profile."
    )


class _TeamView(APIView):
    permission_classes = [permissions.IsAuthenticated, TeamRole]

    @property
    def team(self) -> Team:
        found = access(self.request)
        assert found is not None  # TeamRole refused the request otherwise
        return found.team


def _refused(exc: stats.StatsError) -> ValidationError:
    return ValidationError({exc.field: [str(exc)]})


class CompareStatsView(_TeamView):
    @extend_schema(
        operation_id="compare_stats",
        parameters=[
            OpenApiParameter("a_disk", ID, description="Disk A's id; with b_disk."),
            OpenApiParameter("b_disk", ID, description="Disk B's id; with a_disk."),
            OpenApiParameter("disk", ID, description="One disk before and after `split`; instead of a_disk/b_disk."),
            OpenApiParameter("split", ISO_MOMENT, description="With disk: an ISO date (midnight UTC) or date-time."),
            OpenApiParameter(
                "annotation",
                ID,
                description="Instead of split: a note's id; its moment splits the runs (the note's own disk unless "
                "disk is given).",
            ),
            OpenApiParameter(
                "profile", str, description="A profile's name. Default: the one profile every disk has runs of."
            ),
            OpenApiParameter("metric", str, enum=list(stats.METRICS), description="Default: iops (total IOPS)."),
            OpenApiParameter("test", str, enum=list(analysis.TESTS), description="Default: mann-whitney."),
            OpenApiParameter(
                "skip_unsteady",
                str,
                enum=["true", "false"],
                description="Default true: runs judged not steady are left out (runs not checked stay).",
            ),
            OpenApiParameter(
                "skip_verdicts",
                str,
                enum=["true", "false"],
                description="Default false: true leaves out runs with a verdict against their number (client-bound, "
                "cache suspected, …; runs not judged stay).",
            ),
        ],
        responses={200: CompareStatsSerializer},
    )
    def get(self, request: Request) -> Response:
        """Two sets of runs compared with a statistical test, the difference with its 95 % confidence interval
        and the verdict in words: disk A against disk B under one profile, or one disk before against after a
        moment. Fewer than 5 runs in a set answers verdict `not_enough` ("not enough runs to tell")."""
        try:
            return Response(stats.compare(stats.parse(request.query_params, self.team)))
        except stats.StatsError as exc:
            raise _refused(exc) from exc


class DistributionsView(_TeamView):
    @extend_schema(
        operation_id="distributions",
        parameters=[
            OpenApiParameter("runs", IDS, description="Up to 8 run ids, separated by commas."),
            OpenApiParameter("disks", IDS, description="Up to 8 disk ids: each disk's latest run of `profile`."),
            OpenApiParameter(
                "profile", str, description="With disks: a profile's name. Default: the one every disk has runs of."
            ),
        ],
        responses={200: DistributionsSerializer},
    )
    def get(self, request: Request) -> Response:
        """Completion-latency CDFs (and histograms where json+ bins exist) of chosen runs or disks, per
        direction: the points are the percentiles the tool printed, or every json+ bin."""
        try:
            found: dict[str, Any] = distributions.answer(request.query_params, self.team)
        except stats.StatsError as exc:
            raise _refused(exc) from exc
        return Response(found)
