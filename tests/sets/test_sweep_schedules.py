"""Sweeps scheduled like any profile: a fire of a sweep profile makes one sweep (its points pending at the fire's
slot), once however often the fire is offered, and the schedule's plan counts the sweep's whole time."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import Run, RunSet
from jobs.runs import queueing
from jobs.schedules import dispatcher
from tests.factories import DiskFactory, ProfileFactory, ScheduleFactory

pytestmark = pytest.mark.django_db


def test_a_fire_of_a_sweep_profile_makes_one_sweep_once_and_its_first_point_is_claimed_at_its_slot(team, host):
    disks = [DiskFactory(host=host, label=f"d{i}", target_path=f"/data/d{i}") for i in range(2)]
    sweep = ProfileFactory(team=team, name="qd", runtime_s=10, sweep_axes={"iodepth": "1,4,16"})
    start = timezone.now().replace(microsecond=0) + timedelta(minutes=1)
    schedule = ScheduleFactory(team=team, name="weekly curve", targets=disks, profiles=[sweep], kind="interval",
                               interval_minutes=60, starts_at=start, stagger_s=30)  # fmt: skip

    assert dispatcher.materialise(start + timedelta(seconds=1)) == 2
    dispatcher.fire(schedule, start, start + timedelta(seconds=2))  # offered again: nothing twice

    sets = list(RunSet.objects.filter(schedule=schedule).order_by("disk__label"))
    assert [(s.disk.label, s.trigger, s.fire_time) for s in sets] == [
        ("d0", "schedule", start),
        ("d1", "schedule", start),
    ]
    points = list(sets[1].members.order_by("set_index"))
    assert [p.set_point for p in points] == [{"iodepth": 1}, {"iodepth": 4}, {"iodepth": 16}]
    assert {p.not_before for p in points} == {start + timedelta(seconds=30)}
    assert not Run.objects.filter(schedule=schedule, run_set__isnull=True).exists()

    queueing.dispatch_due(start + timedelta(seconds=31))
    assert [p.state for p in sets[1].members.order_by("set_index")] == ["queued", "pending", "pending"]


def test_the_schedules_plan_counts_a_sweeps_every_point():
    single = ProfileFactory(runtime_s=10)
    sweep = ProfileFactory(team=single.team, runtime_s=10, sweep_axes={"iodepth": "1,4,16"})
    assert dispatcher.sequence_seconds([sweep]) == 3 * dispatcher.sequence_seconds([single])


def test_a_sweep_longer_than_the_teams_bound_at_its_fire_is_one_failed_run_saying_why(team, host):
    disk = DiskFactory(host=host)
    sweep = ProfileFactory(team=team, name="long", runtime_s=900, sweep_axes={"iodepth": "1-16 x2"})
    team.sweep_bound_s = 3600
    team.save()
    start = timezone.now().replace(microsecond=0) + timedelta(minutes=1)
    ScheduleFactory(team=team, targets=[disk], profiles=[sweep], kind="interval", interval_minutes=60,
                    starts_at=start)  # fmt: skip

    dispatcher.materialise(start + timedelta(seconds=1))

    run = Run.objects.get(disk=disk)
    assert not RunSet.objects.exists()
    assert run.state == Run.State.FAILED
    assert run.explanation.startswith("not started: long cannot run on disk")
    assert "longer than the team's bound of 1 h" in run.explanation
