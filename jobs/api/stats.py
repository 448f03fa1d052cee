"""The shapes of the statistics answers, for the schema: two sets of runs compared
(GET /api/v1/compare/stats/, jobs/results/stats.py) and latency distributions side by side
(GET /api/v1/distributions/, jobs/results/distributions.py)."""

from __future__ import annotations

from rest_framework import serializers

from jobs.analysis import stats
from jobs.results.stats import METRICS

VERDICTS = [
    (stats.SIGNIFICANT, "a significant difference"),
    (stats.NOT_SIGNIFICANT, "no significant difference"),
    (stats.NOT_ENOUGH, "not enough runs to tell"),
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
    n = serializers.IntegerField()
    median = serializers.FloatField(allow_null=True)
    mean = serializers.FloatField(allow_null=True)

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField(allow_null=True, help_text="The set's start; null: open.")
        return fields


class CompareStatsSerializer(serializers.Serializer):
    metric = serializers.ChoiceField(choices=list(METRICS))
    metric_label = serializers.CharField()
    unit = serializers.CharField(help_text="The unit of every value and difference: IO/s, bytes/s or µs.")
    profile = serializers.CharField(help_text="The profile whose runs are compared (a name).")
    test = serializers.ChoiceField(choices=list(stats.TESTS))
    skip_unsteady = serializers.BooleanField(help_text="Whether runs judged not steady were left out.")
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
