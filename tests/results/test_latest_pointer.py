"""RunResultLatest: each series' newest run, kept in step with the per-day rollup by every writer of results
(recording a run, the admin's edits and deletes, a disk's rebuild), and filled by its migration from the days
already kept; /metrics reports the latest run of every series through it."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.contrib.admin.sites import AdminSite
from django.db import connection
from django.test import RequestFactory
from django.utils import timezone

from jobs.admin import RunAdmin
from jobs.models import Run, RunResultDay, RunResultLatest
from tests.factories import DiskFactory, HostFactory, ProfileFactory, TeamFactory
from tests.metrics.scraping import finished

pytestmark = pytest.mark.django_db


def pointers(disk) -> dict[str, int]:
    return dict(RunResultLatest.objects.filter(disk=disk).values_list("profile_name", "last_run"))


def newest_by_ranking(disk) -> dict[str, int]:
    """Each series' newest run found the slow way: every day of the disk ranked."""
    best: dict[str, tuple[int, int]] = {}
    for name, last_ms, last_run in RunResultDay.objects.filter(disk=disk).values_list(
        "profile_name", "last_ms", "last_run"
    ):
        best[name] = max(best.get(name, (0, 0)), (last_ms, last_run))
    return {name: run for name, (_, run) in best.items()}


@pytest.fixture
def disk():
    return DiskFactory(host=HostFactory(team=TeamFactory()), with_limits=True)


def test_the_pointer_follows_the_newest_run_of_each_series_as_runs_are_recorded_and_deleted(disk):
    now = timezone.now()
    quick, slow = ProfileFactory(team=disk.team, name="quick"), ProfileFactory(team=disk.team, name="slow")
    first = finished(disk, quick, now - timedelta(days=3))
    newest = finished(disk, quick, now - timedelta(hours=1))
    finished(disk, quick, now - timedelta(days=2))  # recorded later, finished earlier: not the newest
    other = finished(disk, slow, now - timedelta(days=400))
    assert pointers(disk) == newest_by_ranking(disk) == {"quick": newest.pk, "slow": other.pk}

    admin, request = RunAdmin(Run, AdminSite()), RequestFactory().post("/")
    admin.delete_model(request, newest)
    assert pointers(disk)["quick"] != newest.pk
    assert pointers(disk) == newest_by_ranking(disk)
    admin.delete_model(request, other)
    assert "slow" not in pointers(disk)  # a series with no result left has no pointer

    admin.delete_queryset(request, Run.objects.filter(pk=first.pk))  # rebuilds the disk's days
    assert pointers(disk) == newest_by_ranking(disk) and list(pointers(disk)) == ["quick"]


def test_a_rebuild_points_at_the_same_runs_as_recording_did(disk):
    now = timezone.now()
    profiles = [ProfileFactory(team=disk.team, name=f"p{i}") for i in range(3)]
    for i in range(12):
        finished(disk, profiles[i % 3], now - timedelta(hours=7 * i))
    recorded = pointers(disk)
    RunResultLatest.objects.all().delete()
    RunResultDay.rebuild(disk)
    assert pointers(disk) == recorded == newest_by_ranking(disk)


def test_the_migration_fills_the_pointers_from_the_days_kept(disk):
    now = timezone.now()
    other = DiskFactory(host=disk.host, with_limits=True)
    profiles = {name: ProfileFactory(team=disk.team, name=name) for name in "abc"}
    for d in (disk, other):
        for i, name in enumerate("abacab"):
            finished(d, profiles[name], now - timedelta(days=i, hours=d.pk))
    expected = {d.pk: newest_by_ranking(d) for d in (disk, other)}
    RunResultLatest.objects.all().delete()
    fill = importlib.import_module("jobs.migrations.0041_latest_results").FILL
    with connection.cursor() as cursor:
        cursor.execute(fill)
    assert {d.pk: pointers(d) for d in (disk, other)} == expected
