"""Retention: prune_results drops raw output and per-second samples of old runs and keeps what the charts need."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from jobs.imports import importing
from jobs.models import HostSample, Run, RunSample
from tests.builders import rerun_of

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures/fio-3.33-randrw-status-interval.json"


def _imported(disk, days_ago: float) -> Run:
    run = importing.import_result(disk, rerun_of(FIXTURE.read_text(), round(days_ago * 86400)), name="history",
                                 at=timezone.now() - timedelta(days=days_ago))  # fmt: skip
    if not run.samples.exists():  # give every run samples, whatever the fixture holds
        RunSample.objects.bulk_create(RunSample(run=run, t_s=t, read_iops=100.0 + t) for t in range(1, 6))
    return run


def test_old_runs_lose_raw_output_and_samples_but_keep_summary_and_chart(owner_client, disk):
    old, recent = _imported(disk, days_ago=40), _imported(disk, days_ago=5)
    for days in (40, 5):  # the host's telemetry seconds of either age
        HostSample.objects.create(host=disk.host, at=timezone.now() - timedelta(days=days), data={"load1": 0.5})
    chart_before = owner_client.get(f"/disks/{disk.pk}/series.json?range=all").json()
    out = io.StringIO()
    call_command("prune_results", "--older-than", "30", stdout=out, stderr=io.StringIO())
    assert "of 1 runs that finished more than 30 days ago" in out.getvalue()
    assert "and 1 seconds of host telemetry from before then" in out.getvalue()
    assert [s.at.date() for s in HostSample.objects.all()] == [(timezone.now() - timedelta(days=5)).date()]
    old.refresh_from_db()
    recent.refresh_from_db()
    assert old.raw_output == "" and old.pruned_at is not None and not old.samples.exists()
    assert old.summary["total"]["iops"] > 0  # the summary stays
    assert recent.raw_output and recent.pruned_at is None and recent.samples.exists()
    assert owner_client.get(f"/disks/{disk.pk}/series.json?range=all").json() == chart_before
    page = owner_client.get(f"/runs/{old.pk}/").content.decode()
    assert "removed by the retention policy" in page
    # A second prune finds nothing new.
    out = io.StringIO()
    call_command("prune_results", "--older-than", "30", stdout=out, stderr=io.StringIO())
    assert "of 0 runs" in out.getvalue()


def test_a_dry_run_counts_and_changes_nothing(disk):
    old = _imported(disk, days_ago=40)
    samples = old.samples.count()
    out = io.StringIO()
    call_command("prune_results", "--older-than", "30", "--dry-run", stdout=out, stderr=io.StringIO())
    said = out.getvalue()
    assert "would drop the raw output" in said and f"{samples} per-second samples of 1 runs" in said
    old.refresh_from_db()
    assert old.raw_output and old.pruned_at is None and old.samples.count() == samples


def test_a_retention_below_one_day_is_refused(db):
    with pytest.raises(CommandError, match="at least 1 day"):
        call_command("prune_results", "--older-than", "0")
