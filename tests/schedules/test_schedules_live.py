"""Schedules with a real Celery worker, real beat processes and Redis, against the real test sshd and fio."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from jobs.models import Disk, Run, Schedule, ScheduleProfile
from jobs.schedules import dispatcher
from tests.builders import quick_profile, target_dir, team_with_host

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _schedule(team, name, disks, profiles, **fields) -> Schedule:
    schedule = Schedule.objects.create(team=team, name=name, **fields)
    schedule.targets.set(disks)
    for position, profile in enumerate(profiles):
        ScheduleProfile.objects.create(schedule=schedule, profile=profile, position=position)
    return schedule


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def test_a_staggered_schedule_starts_its_targets_on_time_once_each_despite_two_beats(
    fio_installed, sshd, worker, beat_factory, tmp_path
):
    team, host = team_with_host(sshd)
    disks = [
        Disk.objects.create(
            host=host, label=f"d{i}", target_path=target_dir(tmp_path / f"d{i}"), disk_type="custom", spec_iops=5000 + i
        )
        for i in range(3)
    ]
    quick = quick_profile(team, runtime_s=3, size_bytes=8 * 2**20)
    other = quick_profile(team, name="quick randread 2", runtime_s=3, size_bytes=8 * 2**20)
    fire_at = (timezone.now() + timedelta(seconds=6)).replace(microsecond=0)
    staggered = _schedule(team, "staggered", disks, [quick], kind="interval", interval_minutes=60, starts_at=fire_at,
                          stagger_s=10)  # fmt: skip
    # A second schedule on the first disk at the same moment: the two must take turns on it.
    rival = _schedule(team, "same disk", disks[:1], [other], kind="interval", interval_minutes=60, starts_at=fire_at)
    paused = _schedule(team, "paused", disks[1:], [quick], kind="interval", interval_minutes=60, starts_at=fire_at,
                       enabled=False)  # fmt: skip
    beat_factory()
    beat_factory()

    _wait(lambda: Run.objects.filter(schedule__in=[staggered, rival], state__in=Run.FINAL_STATES).count() == 4,
          timeout=120, what="four scheduled runs to finish")  # fmt: skip

    runs = list(Run.objects.filter(schedule=staggered).order_by("not_before"))
    assert len(runs) == 3
    assert all(run.state == Run.State.SUCCEEDED for run in runs), [r.explanation for r in runs]
    for index, run in enumerate(runs):
        assert run.not_before == fire_at + timedelta(seconds=10 * index)
        # The beat tick leaves the limits snapshot to the launch (the worker takes it as the run starts).
        assert run.limits_snapshot["iops"] == 5000 + index
        if run.disk_id != disks[0].pk:  # the first disk may have been busy with the rival schedule's run
            assert abs((run.started_at - run.not_before).total_seconds()) <= 2, (index, run.started_at)
    assert Run.objects.filter(schedule=rival).count() == 1
    assert not Run.objects.filter(schedule=paused).exists()
    on_first = sorted(Run.objects.filter(disk=disks[0]), key=lambda r: r.started_at)
    assert len(on_first) == 2
    assert on_first[0].finished_at <= on_first[1].started_at


def test_fires_missed_while_beat_was_down_are_skipped_not_launched(sshd, worker, beat_factory, tmp_path):
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="d", target_path=target_dir(tmp_path), disk_type="custom")
    fire_at = timezone.now() + timedelta(seconds=2)
    schedule = _schedule(team, "nightly", [disk], [quick_profile(team)], kind="interval", interval_minutes=60,
                         starts_at=fire_at, misfire_grace_s=2)  # fmt: skip
    time.sleep(6)  # beat is "down" through the fire and past its grace
    beat_factory()
    _wait(lambda: Run.objects.filter(schedule=schedule).exists(), timeout=30, what="the missed fire to be recorded")
    time.sleep(2)
    run = Run.objects.get(schedule=schedule)
    assert run.state == Run.State.SKIPPED
    assert "missed by" in run.explanation and "grace 2 s" in run.explanation
    assert run.started_at is None


def test_a_schedule_paused_seconds_before_its_fire_runs_nothing_of_it(fio_installed, sshd, worker, beat_factory,
                                                                      tmp_path):  # fmt: skip
    # The trap: the fire's run is made, claimed and launched CLAIM_LEAD ahead, its wrapper sleeping on the host
    # until the fire; a pause a few seconds before the fire used to let it run all the same.
    team, host = team_with_host(sshd)
    disk = Disk.objects.create(host=host, label="d", target_path=target_dir(tmp_path), disk_type="custom")
    fire_at = (timezone.now() + timedelta(seconds=25)).replace(microsecond=0)
    schedule = _schedule(team, "hourly", [disk], [quick_profile(team)], kind="interval", interval_minutes=60,
                         starts_at=fire_at)  # fmt: skip
    beat_factory()
    _wait(lambda: Run.objects.filter(schedule=schedule, state=Run.State.RUNNING).exists(), timeout=20,
          what="the fire's run to be launched ahead, its wrapper waiting for the fire")  # fmt: skip
    assert timezone.now() < fire_at - timedelta(seconds=5)
    schedule.enabled = False
    with transaction.atomic():  # as the Pause button does
        schedule.save()
        assert dispatcher.stop_unstarted(schedule) == 1
    _wait(lambda: Run.objects.filter(schedule=schedule, state__in=Run.FINAL_STATES).exists(), timeout=20,
          what="the waiting run to be stopped")  # fmt: skip
    run = Run.objects.get(schedule=schedule)
    assert run.state == Run.State.CANCELLED, run.explanation
    assert run.explanation.startswith("cancelled before it started: its schedule hourly was paused")
    assert run.explanation.endswith("the wrapper waiting on the host for its start was stopped, nothing ran")
    assert run.finished_at < fire_at and "total" not in (run.summary or {})  # no result: fio never started
    time.sleep(max(0.0, (fire_at - timezone.now()).total_seconds()) + 3)  # past the fire: nothing else started
    assert list(Run.objects.filter(schedule=schedule).values_list("state", flat=True)) == [Run.State.CANCELLED]
