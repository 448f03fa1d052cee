from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import tasks
from jobs.models import Disk, Profile, Run, Schedule
from jobs.runs import launching, queueing, states
from jobs.schedules import dispatcher
from tests.factories import DiskFactory, HostFactory, ProfileFactory, RunFactory, ScheduleFactory


@pytest.fixture
def quick(team) -> Profile:
    return ProfileFactory(team=team, name="quick", rw="randread", runtime_s=10, size_bytes=2**20)


@pytest.fixture
def disks(host) -> list[Disk]:
    return [DiskFactory(host=host, label=f"d{i}", target_path=f"/data/d{i}") for i in range(3)]


def _schedule(team, disks, profiles, **fields) -> Schedule:
    return ScheduleFactory(team=team, name=fields.pop("name", "nightly"), targets=disks, profiles=profiles, **fields)


def test_a_fire_creates_one_staggered_run_per_target_and_says_which_slot_it_waits_for(team, disks, quick):
    start = timezone.now().replace(microsecond=0) + timedelta(minutes=1)
    schedule = _schedule(team, disks, [quick], kind="interval", interval_minutes=60, starts_at=start, stagger_s=30)
    assert schedule.next_fire_at == start
    assert dispatcher.materialise(start + timedelta(seconds=1)) == 3
    runs = list(Run.objects.filter(schedule=schedule).order_by("not_before"))
    assert [r.not_before for r in runs] == [start, start + timedelta(seconds=30), start + timedelta(seconds=60)]
    assert [r.disk.label for r in runs] == ["d0", "d1", "d2"]
    assert runs[1].explanation.startswith("waiting: stagger slot 2 of 3 at ")
    assert all(r.trigger == Run.Trigger.SCHEDULE and r.state == Run.State.PENDING for r in runs)
    assert all(r.limits_snapshot is None for r in runs)  # taken at launch, outside the beat tick
    schedule.refresh_from_db()
    assert schedule.next_fire_at == start + timedelta(hours=1)


def test_a_repeated_tick_or_a_second_beat_creates_nothing_twice(team, disks, quick):
    start = timezone.now().replace(microsecond=0) + timedelta(minutes=1)
    schedule = _schedule(team, disks, [quick], kind="interval", interval_minutes=60, starts_at=start)
    stale_copy = Schedule.objects.get(pk=schedule.pk)
    now = start + timedelta(seconds=2)
    assert dispatcher.materialise(now) == 3
    assert dispatcher.materialise(now) == 0  # the stretch up to now was claimed by the first tick
    # A second beat that read the schedule before the first one updated it still creates nothing new.
    dispatcher.fire(stale_copy, start, now)
    assert Run.objects.filter(schedule=schedule).count() == 3


def test_a_tick_that_finds_the_last_one_still_under_way_leaves_the_work_to_it(team, disks, quick):
    start = timezone.now().replace(microsecond=0) + states.CLAIM_LEAD / 2  # made by the next tick
    _schedule(team, disks, [quick], kind="interval", interval_minutes=60, starts_at=start)
    with tasks._TICKING:  # another tick of this worker holds it
        assert tasks.tick.run().startswith("skipped")
        assert Run.objects.count() == 0
    assert tasks.tick.run().startswith("created 3,")


def test_profiles_run_one_after_another_on_each_target(team, disks, quick):
    second = ProfileFactory(team=team, name="second", rw="randwrite", runtime_s=20, size_bytes=2**20)
    start = timezone.now().replace(microsecond=0) + timedelta(minutes=1)
    schedule = _schedule(team, disks[:1], [quick, second], kind="interval", interval_minutes=60, starts_at=start)
    dispatcher.materialise(start)
    first_run, second_run = Run.objects.filter(schedule=schedule).order_by("not_before")
    assert (first_run.profile, second_run.profile) == (quick, second)
    gap = (second_run.not_before - first_run.not_before).total_seconds()
    assert gap == 10 + dispatcher.RUN_OVERHEAD_S + dispatcher.SEQUENCE_GAP_S


def test_fires_missed_beyond_the_grace_are_recorded_as_skipped(team, disks, quick):
    start = timezone.now().replace(microsecond=0) + timedelta(minutes=1)
    schedule = _schedule(team, disks, [quick], kind="interval", interval_minutes=10, starts_at=start,
                         misfire_grace_s=60)  # fmt: skip
    # Beat was down for 25 minutes: three fires came and went (the last one within its grace).
    dispatcher.materialise(start + timedelta(minutes=20, seconds=30))
    states = {r.fire_time: r.state for r in Run.objects.filter(schedule=schedule)}
    assert states[start] == states[start + timedelta(minutes=10)] == Run.State.SKIPPED
    assert states[start + timedelta(minutes=20)] == Run.State.PENDING
    skipped = Run.objects.filter(schedule=schedule, state=Run.State.SKIPPED).first()
    assert "missed by" in skipped.explanation and "grace 60 s" in skipped.explanation
    assert queueing.dispatch_due(start + timedelta(minutes=21)) == 3  # the on-time fire's three runs


def test_a_paused_schedule_creates_nothing(team, disks, quick):
    start = timezone.now().replace(microsecond=0) + timedelta(minutes=1)
    _schedule(team, disks, [quick], kind="interval", interval_minutes=1, starts_at=start, enabled=False)
    assert dispatcher.materialise(start + timedelta(minutes=5)) == 0
    assert not Run.objects.exists()


def test_an_exclusive_host_runs_one_benchmark_at_a_time(team, disks, quick):
    host = disks[0].host
    host.exclusive = True
    host.save()
    first = queueing.create_run(disks[0], quick)
    second = queueing.create_run(disks[1], quick)
    assert states.claim(first)
    assert not states.claim(second)
    second.refresh_from_db()
    assert second.state == Run.State.PENDING
    assert second.explanation == f"waiting: host {host.name} runs one benchmark at a time; busy with run {first.pk}"


def test_a_shared_host_runs_its_disks_in_parallel(team, disks, quick):
    assert states.claim(queueing.create_run(disks[0], quick))
    assert states.claim(queueing.create_run(disks[1], quick))


def test_a_run_still_waiting_when_its_window_closes_is_skipped(team, disks, quick):
    now = timezone.now()
    schedule = _schedule(team, disks[:1], [quick], kind="interval", interval_minutes=60,
                         window_start=now - timedelta(days=2), window_end=now + timedelta(hours=1))  # fmt: skip
    run = RunFactory(disk=disks[0], profile=quick, schedule=schedule, fire_time=now, state=Run.State.PENDING)
    assert dispatcher.expire_outside_window(now + timedelta(hours=2)) == 1
    run.refresh_from_db()
    assert run.state == Run.State.SKIPPED and "outside the schedule's active window" in run.explanation


def test_editing_a_schedule_leaves_finished_runs_alone(team, disks, quick):
    schedule = _schedule(team, disks[:1], [quick], kind="cron", cron="30 2 * * *")
    done = RunFactory(disk=disks[0], profile=quick, schedule=schedule, state=Run.State.SUCCEEDED,
                      fire_time=timezone.now() - timedelta(days=1), summary={"total": {"iops": 1}})  # fmt: skip
    schedule.cron = "0 3 * * *"
    schedule.save()
    done.refresh_from_db()
    assert (done.state, done.summary, done.schedule_id) == (Run.State.SUCCEEDED, {"total": {"iops": 1}}, schedule.pk)


def test_auto_stagger_keeps_runs_on_one_host_apart_and_lets_other_hosts_start_together(team, disks, quick, credential):
    other_host = HostFactory(team=team, name="vm2", address="10.0.0.9", username="b", credential=credential)
    elsewhere = DiskFactory(host=other_host, label="e", target_path="/e")
    start = timezone.now().replace(microsecond=0) + timedelta(minutes=1)
    schedule = _schedule(team, [*disks[:2], elsewhere], [quick], kind="interval", interval_minutes=60,
                         starts_at=start, auto_stagger=True)  # fmt: skip
    offsets = {p.disk.label: p.offset_s for p in dispatcher.plan(schedule)}
    assert offsets["e"] == 0 and min(offsets["d0"], offsets["d1"]) == 0
    assert abs(offsets["d0"] - offsets["d1"]) >= 10 + dispatcher.RUN_OVERHEAD_S


def test_one_tick_claims_every_free_run_together_and_sends_one_fan_out_message(
    team, disks, quick, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    busy = RunFactory(disk=disks[2], profile=quick, running=True)
    waiting = [queueing.create_run(disk, quick) for disk in disks]
    second_on_d0 = queueing.create_run(disks[0], quick)
    with django_capture_on_commit_callbacks() as callbacks, django_assert_max_num_queries(10):
        assert queueing.dispatch_due() == 2
    assert len(callbacks) == 1  # one fan-out launch message for the whole tick
    states = {run.pk: (run.state, run.explanation) for run in Run.objects.filter(pk__in=[r.pk for r in waiting])}
    assert states[waiting[0].pk] == states[waiting[1].pk] == (Run.State.QUEUED, "queued for a worker")
    assert states[waiting[2].pk] == (Run.State.PENDING, f"waiting: disk busy with run {busy.pk}")
    second_on_d0.refresh_from_db()
    assert (second_on_d0.state, second_on_d0.explanation) == (
        Run.State.PENDING, f"waiting: disk busy with run {waiting[0].pk}"
    )  # fmt: skip


def test_claims_fall_back_to_one_at_a_time_when_a_disk_was_taken_meanwhile(team, disks, quick):
    # Two runs judged free on one disk (as when another process claimed between the look and the UPDATE):
    # the partial unique index refuses the batch, and the one-by-one claim queues exactly one.
    first, second = queueing.create_run(disks[0], quick), queueing.create_run(disks[0], quick)
    assert queueing._claim_together({first.pk: "", second.pk: ""}, timezone.now()) == 1
    states = sorted(Run.objects.filter(pk__in=[first.pk, second.pk]).values_list("state", flat=True))
    assert states == [Run.State.PENDING, Run.State.QUEUED]


def test_a_fire_is_made_and_claimed_ahead_so_even_the_first_target_starts_on_time(team, disks, quick):
    now = timezone.now().replace(microsecond=0)
    soon = _schedule(team, disks[:1], [quick], name="soon", kind="interval", interval_minutes=60,
                     starts_at=now + timedelta(seconds=10))  # fmt: skip
    later = _schedule(team, disks[1:2], [quick], name="later", kind="interval", interval_minutes=60,
                      starts_at=now + states.CLAIM_LEAD + timedelta(seconds=30))  # fmt: skip
    assert dispatcher.materialise(now) == 1
    (run,) = Run.objects.filter(schedule=soon)
    assert run.not_before == now + timedelta(seconds=10) and run.explanation.startswith("waiting: stagger slot 1")
    assert not Run.objects.filter(schedule=later).exists()
    assert queueing.dispatch_due(now) == 1  # queued now; the wrapper on the host waits for not_before
    assert dispatcher.materialise(now + timedelta(seconds=5)) == 0  # the stretch up to now + lead is done


def test_a_schedule_paused_seconds_before_a_fire_starts_nothing_of_that_fire(owner_client, team, disks, quick):
    # The trap: paused at hh:59:55, it still fired at hh+1:00, because the fire's runs were already made,
    # claimed and launched (CLAIM_LEAD ahead), the wrapper waiting on the host for the exact second.
    now = timezone.now().replace(microsecond=0)
    fire = now + timedelta(seconds=5)
    schedule = _schedule(team, disks, [quick], kind="interval", interval_minutes=60, starts_at=fire, stagger_s=20)
    dispatcher.tick(now)
    waiting_on_host, queued, pending = Run.objects.filter(schedule=schedule).order_by("not_before")
    assert (queued.state, pending.state) == (Run.State.QUEUED, Run.State.PENDING)  # slot 3 is beyond the lead
    Run.objects.filter(pk=waiting_on_host.pk).update(state=Run.State.RUNNING, started_at=fire, remote_dir="/r/x")
    started = RunFactory(disk=DiskFactory(host=disks[0].host, label="e", target_path="/e"), profile=quick,
                         schedule=schedule, trigger=Run.Trigger.SCHEDULE, fire_time=now - timedelta(hours=1),
                         not_before=now - timedelta(seconds=30), running=True)  # fmt: skip
    asked = RunFactory(disk=disks[2], profile=quick, schedule=schedule, trigger=Run.Trigger.MANUAL,
                       not_before=now + timedelta(seconds=30))  # fmt: skip

    response = owner_client.post(f"/schedules/{schedule.pk}/toggle", follow=True)

    assert "3 run(s) of its next fire, not yet started, were cancelled" in response.content.decode()
    runs = {run.pk: run for run in Run.objects.filter(schedule=schedule)}
    assert runs[pending.pk].state == Run.State.CANCELLED
    assert runs[pending.pk].explanation.startswith("cancelled before it started: its schedule nightly was paused")
    assert runs[queued.pk].cancel_requested and runs[waiting_on_host.pk].cancel_requested
    assert runs[waiting_on_host.pk].explanation == "cancelling: its schedule nightly was paused before this run started"
    # The queued run ends at its launch without connecting to the host.
    assert launching.launch(queued.pk) == Run.State.CANCELLED
    assert Run.objects.get(pk=queued.pk).explanation == states.paused_explanation("nightly")
    # A run whose start has come goes on, and so does a Run now a person asked for.
    assert (runs[started.pk].state, runs[started.pk].cancel_requested) == (Run.State.RUNNING, False)
    assert (runs[asked.pk].state, runs[asked.pk].cancel_requested) == (Run.State.PENDING, False)
    # The fire's time comes: nothing of it is claimed.
    assert queueing.dispatch_due(fire + timedelta(seconds=30)) == 1  # only the Run now
    assert not Run.objects.filter(schedule=schedule, trigger=Run.Trigger.SCHEDULE, state=Run.State.QUEUED).exists()


def test_a_fire_that_raced_the_pause_is_cancelled_at_its_claim_and_at_its_launch(team, disks, quick):
    now = timezone.now().replace(microsecond=0)
    schedule = _schedule(team, disks[:2], [quick], kind="interval", interval_minutes=60,
                         starts_at=now + timedelta(seconds=5))  # fmt: skip
    dispatcher.materialise(now)
    first, second = Run.objects.filter(schedule=schedule).order_by("disk__label")
    assert states.claim(first)
    # Paused without the pause's own clean-up, as a tick that made or claimed the fire meanwhile would see it.
    Schedule.objects.filter(pk=schedule.pk).update(enabled=False)
    assert queueing.dispatch_due(now) == 0
    assert Run.objects.get(pk=second.pk).state == Run.State.CANCELLED
    assert launching.launch(first.pk) == Run.State.CANCELLED
    assert Run.objects.get(pk=first.pk).explanation == states.paused_explanation("nightly")
    third = RunFactory(disk=disks[2], profile=quick, schedule=schedule, trigger=Run.Trigger.SCHEDULE,
                       fire_time=now, not_before=now)  # fmt: skip
    assert not states.claim(third)
    assert Run.objects.get(pk=third.pk).state == Run.State.CANCELLED


def test_a_fire_whose_profile_can_no_longer_run_on_its_disk_records_why_instead_of_failing_at_launch(
    team, disks, quick
):
    start = timezone.now().replace(microsecond=0) + timedelta(minutes=1)
    schedule = _schedule(team, disks[:2], [quick], kind="interval", interval_minutes=60, starts_at=start)
    # After the schedule was saved, the profile lost its file size: it now runs on a whole block device only.
    Profile.objects.filter(pk=quick.pk).update(size_bytes=None)
    assert dispatcher.materialise(start + timedelta(seconds=1)) == 2
    runs = list(Run.objects.filter(schedule=schedule))
    assert {r.state for r in runs} == {Run.State.FAILED}
    assert all(r.finished_at is not None for r in runs)
    assert runs[0].explanation.startswith(f"not started: quick cannot run on disk {runs[0].disk.label}: it has no")
