"""A synchronised group as one set of runs, without a worker: made whole or refused whole before anything is written,
its members claimed all at once for one start instant only when every disk is free, waiting and saying why
otherwise, ended partial naming the member that failed, and cancelled with one cancel. Members end here through the
state machine (states.finish), as the collection ends them; the group with real fio on three hosts is in
test_group_fio.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import Disk, Run, RunSet
from jobs.runs import queueing, states
from jobs.runs.queueing import RunRefused
from jobs.sets import advancing, cancelling, requesting
from tests.factories import DiskFactory, ProfileFactory
from tests.sets.sweeps import fail, members, succeed, sweep_profile, three_disks

pytestmark = pytest.mark.django_db


def test_a_group_is_made_with_one_member_a_disk_and_all_are_claimed_for_one_start_instant(
    django_capture_on_commit_callbacks,
):
    disks = three_disks()
    before = timezone.now()

    with django_capture_on_commit_callbacks() as sent:
        run_set = requesting.request_group(disks, ProfileFactory(team=disks[0].team))

    group = members(run_set)
    assert run_set.kind == RunSet.Kind.GROUP and run_set.label == f"group {run_set.pk}"
    assert run_set.disk == disks[0] and run_set.plan == {"disks": [d.pk for d in disks]}
    assert [(m.disk, m.set_index, m.set_point) for m in group] == [(d, i, {}) for i, d in enumerate(disks)]
    assert all(m.state == Run.State.QUEUED for m in group)
    # One instant for all, 5 s and 0.2 s a member ahead: each host's wrapper waits for it.
    start = group[0].not_before
    assert {m.not_before for m in group} == {start}
    assert before + timedelta(seconds=5.6) <= start <= timezone.now() + timedelta(seconds=5.6)
    assert run_set.state == RunSet.State.RUNNING
    assert run_set.explanation == f"running: 3 members start at {start.strftime('%H:%M:%S')} UTC"
    assert len(sent) == 1  # one fan-out message launches them all


def test_one_member_the_safety_rules_refuse_refuses_the_group_and_nothing_is_written():
    # The third disk is a block device not marked for destructive writes, and the profile writes.
    disks = three_disks(kind=Disk.Kind.BLOCK, target_path="/dev/vdb", allow_destructive=False)
    profile = ProfileFactory(team=disks[0].team, rw="randwrite")

    with pytest.raises(RunRefused) as refused:
        requesting.request_group(disks, profile)

    assert refused.value.field == "disks"
    message = str(refused.value)
    assert message.startswith("Member 3 (disk c on host host-3) is refused, so the whole group is, and nothing was")
    assert "tick “Allow destructive writes” on the disk only if that is what you want" in message
    assert not RunSet.objects.exists() and not Run.objects.exists()


@pytest.mark.parametrize(
    ("pick", "refusal"),
    [
        (lambda disks: disks[:1], "A group has 2 to 100 members, one a disk; 1 was given"),
        (lambda disks: [disks[0], disks[1], disks[0]], "is given more than once"),
    ],
)
def test_a_group_of_one_disk_or_with_a_disk_twice_is_refused(pick, refusal):
    disks = three_disks()
    with pytest.raises(RunRefused, match=refusal):
        requesting.request_group(pick(disks), ProfileFactory(team=disks[0].team))
    assert not RunSet.objects.exists() and not Run.objects.exists()


def test_a_sweep_profile_or_two_disks_of_a_one_at_a_time_host_are_refused_as_a_group():
    disks = three_disks()
    with pytest.raises(RunRefused, match="is a set profile"):
        requesting.request_group(disks, sweep_profile(disks[0].team))
    host = disks[1].host
    host.exclusive = True
    host.save()
    crowded = [disks[0], disks[1], DiskFactory(host=host, label="b2")]
    with pytest.raises(RunRefused, match=f"Host {host.name} runs one benchmark at a time"):
        requesting.request_group(crowded, ProfileFactory(team=disks[0].team))
    assert not Run.objects.exists()


def test_a_busy_disk_makes_the_group_wait_saying_which_and_it_starts_whole_when_the_disk_is_free(
    django_capture_on_commit_callbacks,
):
    disks = three_disks()
    profile = ProfileFactory(team=disks[0].team)
    with django_capture_on_commit_callbacks():
        other = queueing.request_run(disks[1], profile)
        run_set = requesting.request_group(disks, profile)

    why = f"waiting: member 2 (disk b on host host-2): disk busy with run {other.pk}; the members start together"
    assert run_set.state == RunSet.State.PENDING and run_set.explanation == why
    assert [(m.state, m.explanation) for m in members(run_set)] == [(Run.State.PENDING, why)] * 3
    # The tick claims none of it while the disk is busy.
    with django_capture_on_commit_callbacks():
        queueing.dispatch_due()
    assert all(m.state == Run.State.PENDING for m in members(run_set))

    with django_capture_on_commit_callbacks():
        assert states.finish(other, Run.State.SUCCEEDED, "finished", from_states=Run.ACTIVE_STATES)

    group = members(run_set)
    assert all(m.state == Run.State.QUEUED for m in group)
    assert len({m.not_before for m in group}) == 1
    run_set.refresh_from_db()
    assert run_set.state == RunSet.State.RUNNING


def test_the_tick_claims_a_waiting_group_whole_once_its_disks_are_free(django_capture_on_commit_callbacks):
    disks = three_disks()
    profile = ProfileFactory(team=disks[0].team)
    with django_capture_on_commit_callbacks():
        other = queueing.request_run(disks[2], profile)
        run_set = requesting.request_group(disks, profile)
    # Ended without handing its disk on (a run ended by hand): the tick finds the group due.
    Run.objects.filter(pk=other.pk).update(state=Run.State.SUCCEEDED)

    with django_capture_on_commit_callbacks():
        assert queueing.dispatch_due() == 3

    assert all(m.state == Run.State.QUEUED for m in members(run_set))


def test_a_disk_held_by_a_running_sweep_makes_the_group_wait_naming_the_sweep(django_capture_on_commit_callbacks):
    disks = three_disks()
    with django_capture_on_commit_callbacks():
        sweep = requesting.request_sweep(disks[0], sweep_profile(disks[0].team))
        first = members(sweep)[0]
        succeed(first, 1000, 100)
        # Between two points, its next one not yet claimed: the sweep holds the disk, no run is on it.
        Run.objects.filter(run_set=sweep, state=Run.State.QUEUED).update(state=Run.State.PENDING)
        run_set = requesting.request_group(disks, ProfileFactory(team=disks[0].team))

    assert run_set.state == RunSet.State.PENDING
    assert run_set.explanation == (
        f"waiting: member 1 (disk a on host host-1): disk held by sweep {sweep.pk} until its last point ends; "
        f"the members start together"
    )


def test_a_group_ends_partial_naming_the_member_that_did_not_succeed(django_capture_on_commit_callbacks):
    disks = three_disks()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group(disks, ProfileFactory(team=disks[0].team))
        first, second, third = members(run_set)
        succeed(first, 1000, 100)
        succeed(second, 1100, 120)
        fail(third, "fio exited with status 1")
        assert advancing.advance(run_set.pk) == RunSet.State.FAILED

    run_set.refresh_from_db()
    assert run_set.explanation == (
        "partial: 2 of 3 members succeeded; member 3 on host host-3 failed: fio exited with status 1"
    )
    listed = run_set.result["members"]
    assert [(m["name"], m["run"], m["state"]) for m in listed] == [
        ("member 1", first.pk, "succeeded"),
        ("member 2", second.pk, "succeeded"),
        ("member 3", third.pk, "failed"),
    ]
    assert run_set.result["offsets"].startswith("offsets not measured")


def test_a_group_whose_members_all_succeed_succeeds(django_capture_on_commit_callbacks):
    disks = three_disks()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group(disks, ProfileFactory(team=disks[0].team))
        Run.objects.filter(run_set=run_set).update(started_at=timezone.now())
        for member, iops in zip(members(run_set), (1000, 2000, 3000), strict=True):
            succeed(member, iops, 100)
        assert advancing.advance(run_set.pk) == RunSet.State.SUCCEEDED

    run_set.refresh_from_db()
    assert run_set.explanation == "finished: 3 of 3 members succeeded"
    assert run_set.result["totals"]["whole_runs"]["iops"] == 6000


@pytest.mark.parametrize("busy", [False, True], ids=["claimed", "waiting"])
def test_one_cancel_ends_every_member_of_a_group(busy, django_capture_on_commit_callbacks):
    disks = three_disks()
    profile = ProfileFactory(team=disks[0].team)
    with django_capture_on_commit_callbacks():
        if busy:
            queueing.request_run(disks[1], profile)
        run_set = requesting.request_group(disks, profile)
        run_set = cancelling.cancel(run_set)

    assert run_set.state == RunSet.State.CANCELLED
    assert run_set.explanation == "cancelled: 0 of 3 members succeeded"
    assert all(m.state == Run.State.CANCELLED for m in members(run_set))
