"""Schedules of groups (Schedule.as_group): a fire makes one group a profile on all the targets, once however often it
is offered, its members told the fire's instant when claimed; a fire whose group waits says which member's disk and
why, as a group started by hand does; a member refused at the fire fails the fire on every target, saying why; a
pause ends a waiting group cancelled. The form and the API refuse what could never fire, naming the field."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from jobs.api.models import ApiToken
from jobs.models import Disk, Run, RunSet, Schedule
from jobs.runs import queueing, states
from jobs.schedules import dispatcher
from tests.factories import DiskFactory, HostFactory, ProfileFactory, ScheduleFactory
from tests.sets.sweeps import members, sweep_profile

pytestmark = pytest.mark.django_db


def group_schedule(team, **fields) -> tuple[Schedule, list[Disk]]:
    """An hourly group schedule from a minute ahead of its quick profile on three disks of three hosts (c-, b-, a-
    named so that plan order, by host then label, is not the order they were made in)."""
    disks = [DiskFactory(host=HostFactory(team=team, name=f"db-{n}"), label=n) for n in "cba"]
    start = timezone.now().replace(microsecond=0) + timedelta(minutes=1)
    quick = ProfileFactory(team=team, name="quick", runtime_s=5, size_bytes=2**20)
    schedule = ScheduleFactory(team=team, name="together", targets=disks, profiles=[quick], kind="interval",
                               interval_minutes=60, starts_at=start, as_group=True, **fields)  # fmt: skip
    return schedule, sorted(disks, key=lambda d: d.label)


def test_a_fire_makes_one_group_once_and_its_members_are_claimed_for_the_fires_instant(
    team, django_capture_on_commit_callbacks
):
    schedule, disks = group_schedule(team)
    start = schedule.next_fire_at

    assert dispatcher.materialise(start - timedelta(seconds=1)) == 1
    dispatcher.fire(schedule, start, start)  # offered again: nothing twice

    group = RunSet.objects.get(schedule=schedule)
    assert (group.kind, group.trigger, group.fire_time, group.plan) == (
        RunSet.Kind.GROUP, "schedule", start, {"disks": [d.pk for d in disks]}
    )  # fmt: skip
    assert [(m.disk, m.state, m.not_before) for m in members(group)] == [(d, "pending", start) for d in disks]
    assert not Run.objects.filter(schedule=schedule, run_set__isnull=True).exists()

    # Claimed up to CLAIM_LEAD early, yet told the fire's own instant, all at once.
    with django_capture_on_commit_callbacks():
        assert queueing.dispatch_due(start - states.CLAIM_LEAD + timedelta(seconds=1)) == 3
    assert [(m.state, m.not_before) for m in members(group)] == [("queued", start)] * 3
    group.refresh_from_db()
    assert group.explanation == f"running: 3 members start at {start.strftime('%H:%M:%S')} UTC"


def test_a_fire_whose_group_waits_says_which_member_and_why(team, django_capture_on_commit_callbacks):
    schedule, disks = group_schedule(team)
    start = schedule.next_fire_at
    with django_capture_on_commit_callbacks():
        busy = queueing.request_run(disks[1], ProfileFactory(team=team, name="other"))
        dispatcher.materialise(start)
        queueing.dispatch_due(start)

    group = RunSet.objects.get(schedule=schedule)
    why = f"waiting: member 2 (disk b on host db-b): disk busy with run {busy.pk}; the members start together"
    assert (group.state, group.explanation) == (RunSet.State.PENDING, why)
    assert [(m.state, m.explanation) for m in members(group)] == [("pending", why)] * 3

    # A pause ends the waiting group cancelled, with its members.
    schedule.enabled = False
    schedule.save()
    dispatcher.stop_unstarted(schedule)
    group.refresh_from_db()
    assert (group.state, group.explanation) == (RunSet.State.CANCELLED, "cancelled: 0 of 3 members succeeded")


def test_a_member_refused_at_the_fire_fails_the_fire_on_every_target_saying_why(team):
    schedule, disks = group_schedule(team)
    # Changed since the schedule was saved: a block device not marked for destructive writes, and a writing profile.
    Disk.objects.filter(pk=disks[2].pk).update(kind=Disk.Kind.BLOCK, target_path="/dev/vdb", allow_destructive=False)
    schedule.scheduleprofile_set.update(profile=ProfileFactory(team=team, name="writes", rw="randwrite"))

    dispatcher.materialise(schedule.next_fire_at)

    assert not RunSet.objects.exists()
    runs = list(Run.objects.filter(schedule=schedule).order_by("disk__label"))
    assert [(r.disk, r.state) for r in runs] == [(d, Run.State.FAILED) for d in disks]
    assert all(r.explanation.startswith("not started: Member 3 (disk c on host db-c) is refused") for r in runs)


def _form(disks, profile, **overrides) -> dict:
    data = {"name": "together", "kind": "cron", "cron": "30 2 * * *", "timezone": "UTC", "stagger_s": "0",
            "misfire_grace_s": "300", "enabled": "on", "targets": [d.pk for d in disks], "profile_0": profile.pk,
            "as_group": "on"}  # fmt: skip
    return data | overrides


def test_the_form_saves_a_group_schedule_and_refuses_one_that_could_never_fire(owner_client, team):
    disks = [DiskFactory(host=HostFactory(team=team, name=f"db-{n}"), label=n) for n in "ab"]
    quick = ProfileFactory(team=team, name="quick", runtime_s=5, size_bytes=2**20)
    refusals = [
        ({"targets": [disks[0].pk]}, "targets", "A group has 2 to 100 members, one a disk; 1 was given"),
        ({"stagger_s": "30"}, "stagger_s", "A group's members start together: set the stagger to 0"),
        ({"profile_0": sweep_profile(team).pk}, "profile_0", "is a set profile"),
    ]
    for overrides, field, words in refusals:
        response = owner_client.post("/schedules/new/", _form(disks, quick, **overrides))
        assert response.status_code == 200
        errors = response.context["form"].errors
        assert words in " ".join(errors.get(field, [])), errors
        assert not Schedule.objects.exists()

    assert owner_client.post("/schedules/new/", _form(disks, quick)).status_code == 302
    assert Schedule.objects.get().as_group
    assert "as a group: the targets start together" in owner_client.get("/schedules/").content.decode()
    preview = owner_client.post("/schedules/preview.json", _form(disks, quick)).json()
    assert [run["offset_s"] for run in preview["fires"][0]["runs"]] == [0, 0]


def test_the_api_takes_as_group_and_refuses_naming_the_field(owner, team):
    disks = [DiskFactory(host=HostFactory(team=team, name=f"db-{n}"), label=n) for n in "ab"]
    quick = ProfileFactory(team=team, name="quick", runtime_s=5, size_bytes=2**20)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(owner, team, 'tests')[1]}")
    body = {"name": "together", "cron": "30 2 * * *", "targets": [d.pk for d in disks], "profiles": [quick.pk],
            "as_group": True}  # fmt: skip

    one = api.post("/api/v1/schedules/", body | {"targets": [disks[0].pk]}, content_type="application/json")
    staggered = api.post("/api/v1/schedules/", body | {"auto_stagger": True}, content_type="application/json")
    assert one.status_code == 400 and "1 was given" in one.json()["targets"][0]
    assert staggered.status_code == 400 and "set the stagger to 0" in staggered.json()["stagger_s"][0]
    assert not Schedule.objects.exists()

    created = api.post("/api/v1/schedules/", body, content_type="application/json")
    assert created.status_code == 201, created.content
    assert created.json()["as_group"] is True and Schedule.objects.get().as_group
