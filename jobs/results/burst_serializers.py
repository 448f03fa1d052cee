"""The shapes of the burst-credit answers (jobs/results/burst.py, the bucket itself in jobs/limits/burst.py), for
the schema: a disk's bucket, balance and replayed runs (GET /api/v1/disks/{id}/burst/, jobs/disks/api.py), and
the `burst` object of a run's detail (jobs/runs/api.py)."""

from __future__ import annotations

from rest_framework import serializers

LABELS = [
    ("burst", "served from burst"),
    ("partly", "partly from burst"),
    ("baseline", "baseline"),
    ("", "not counted"),
]
LIMITS = [("burst", "burst"), ("baseline", "baseline")]


class BurstModelSerializer(serializers.Serializer):
    metric = serializers.ChoiceField(
        choices=[("iops", "iops"), ("throughput", "throughput")],
        help_text="What the credits count: I/Os (gp2, Azure) or bytes (st1, sc1).",
    )
    unit = serializers.CharField(help_text="'I/O credits' or 'bytes of credit'.")
    capacity = serializers.FloatField(help_text="A full bucket, over all stripes, in the unit.")
    capacity_text = serializers.CharField()
    refill_per_s = serializers.FloatField(help_text="Credits earned per second: the baseline.")
    burst_per_s = serializers.FloatField(help_text="Credits spent per second at full speed: the burst limit.")
    min_io_bytes = serializers.IntegerField(
        allow_null=True, help_text="Metric throughput: the credit one I/O spends at least (st1/sc1: 1 MiB)."
    )
    full_bucket_seconds = serializers.FloatField(help_text="How long a full bucket lasts at full speed.")
    text = serializers.CharField(help_text="The model in one sentence.")


class BurstNowSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    balance = serializers.FloatField(help_text="Predicted credits now, in the model's unit.")
    balance_text = serializers.CharField()
    percent = serializers.FloatField(help_text="Of a full bucket.")
    refill_seconds = serializers.FloatField(help_text="Until full if the disk stays idle; 0 when full.")
    refill_text = serializers.CharField(allow_blank=True)
    full_speed_seconds = serializers.FloatField(help_text="How long a full-speed run starting now stays on burst.")
    full_speed_text = serializers.CharField()
    exhausts_at = serializers.DateTimeField(help_text="When such a run would empty the bucket.")


class BurstRunSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    started_at = serializers.DateTimeField(help_text="Its I/O's start: its finish less the runtime fio printed.")
    seconds = serializers.FloatField()
    spend_per_s = serializers.FloatField(allow_null=True, help_text="Credits it spent per second, as measured.")
    start_balance = serializers.FloatField()
    start_percent = serializers.FloatField()
    end_balance = serializers.FloatField()
    end_percent = serializers.FloatField()
    label = serializers.ChoiceField(  # type: ignore[assignment]  # a field: the metaclass moves it out of the class
        choices=LABELS, help_text="Empty: the run measured nothing the bucket counts."
    )
    label_text = serializers.CharField()
    dry_after_s = serializers.FloatField(allow_null=True, help_text="Partly: about when the bucket ran dry.")


class DiskBurstSerializer(serializers.Serializer):
    model = BurstModelSerializer(allow_null=True, help_text="null: the disk has no credit bucket (see why).")
    why = serializers.CharField(allow_null=True, help_text="Why there is no model; null when there is one.")
    now = BurstNowSerializer(allow_null=True)
    assumes = serializers.CharField(help_text="What the prediction takes for granted.")
    full_from = serializers.CharField(allow_blank=True, help_text="Where the replay starts with a full bucket.")
    runs = BurstRunSerializer(many=True, help_text="The replayed runs, newest first, at most 100.")


class BurstKneeSerializer(serializers.Serializer):
    at_s = serializers.FloatField(help_text="The last second at the burst level, since the run started.")
    burst_iops = serializers.FloatField(help_text="The median level before the knee.")
    baseline_iops = serializers.FloatField(help_text="The median level after it.")
    measured_burst_s = serializers.FloatField()
    predicted_burst_s = serializers.FloatField(
        allow_null=True, help_text="How long the predicted start balance lasts at the measured burst level."
    )


class RunBurstSerializer(serializers.Serializer):
    start_balance = serializers.FloatField(help_text="Predicted credits at the run's start.")
    start_balance_text = serializers.CharField()
    start_percent = serializers.FloatField()
    label = serializers.ChoiceField(choices=LABELS)  # type: ignore[assignment]  # as above
    label_text = serializers.CharField()
    limit_applied = serializers.ChoiceField(
        choices=LIMITS, allow_null=True, help_text="The limit the run is judged against; null when not counted."
    )
    efficiency_percent = serializers.FloatField(
        allow_null=True, help_text="Measured total IOPS as a share of the limit that applied."
    )
    dry_after_s = serializers.FloatField(allow_null=True)
    model = serializers.CharField()
    assumes = serializers.CharField()
    knee = BurstKneeSerializer(allow_null=True, help_text="Where the per-second IOPS fell to the baseline, if it did.")
