"""A group-size sweep as one set of runs, without a worker: refused whole before anything is written, made with one
member a disk for each size, its sizes claimed one after another (each size's members together, for one start
instant), ended partial when a size does not all succeed, cancelled with one cancel, and its result and page: the
total and per-member IOPS at each size and where adding members stopped adding IOPS. Members end here through the
state machine (states.finish), as the collection ends them; the sweep with real fio on three hosts is in
test_group_sizes_fio.py."""

from __future__ import annotations

import io
import json
import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from jobs.models import Disk, Run, RunSet
from jobs.runs import queueing, states
from jobs.runs.queueing import RunRefused
from jobs.sets import advancing, cancelling, requesting
from tests.factories import ProfileFactory
from tests.sets.sweeps import fail, measured, members, three_disks

pytestmark = pytest.mark.django_db


def test_a_sweep_is_made_size_after_size_and_only_its_first_size_is_claimed(django_capture_on_commit_callbacks):
    disks = three_disks()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group_sizes(disks, ProfileFactory(team=disks[0].team))

    made = members(run_set)
    assert run_set.kind == RunSet.Kind.GROUP_SIZES and run_set.label == f"group-size sweep {run_set.pk}"
    assert run_set.plan == {"disks": [d.pk for d in disks], "sizes": [1, 2, 3]}
    assert [(m.disk.label, m.set_index) for m in made] == [
        ("a", 0), ("a", 1), ("b", 2), ("a", 3), ("b", 4), ("c", 5)
    ]  # fmt: skip
    assert [m.state for m in made] == [Run.State.QUEUED] + [Run.State.PENDING] * 5
    at = made[0].not_before.strftime("%H:%M:%S")
    assert run_set.state == RunSet.State.RUNNING
    assert run_set.explanation == f"running size 1 of 3: 1 member starts at {at} UTC"
    # The tick claims no larger size while the first runs, and their members say why.
    with django_capture_on_commit_callbacks():
        assert queueing.dispatch_due() == 0
    assert [(m.state, m.explanation) for m in members(run_set)[1:]] == [
        (Run.State.PENDING, "waiting: the smaller sizes of its sweep run first")
    ] * 5


def test_the_tick_claims_the_next_size_whole_once_the_smaller_ones_have_ended(django_capture_on_commit_callbacks):
    disks = three_disks()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group_sizes(disks, ProfileFactory(team=disks[0].team))
    # Ended without handing its disk on (a run ended by hand): the tick finds the next size due.
    Run.objects.filter(pk=members(run_set)[0].pk).update(state=Run.State.SUCCEEDED)

    with django_capture_on_commit_callbacks():
        assert queueing.dispatch_due() == 2

    assert [m.state for m in members(run_set)] == [Run.State.SUCCEEDED] + [Run.State.QUEUED] * 2 + [
        Run.State.PENDING
    ] * 3


def test_the_advance_after_a_size_ended_claims_the_next_size_when_its_members_finishes_each_missed_the_other(
    django_capture_on_commit_callbacks,
):
    disks = three_disks()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group_sizes(disks, ProfileFactory(team=disks[0].team))
    # Two members of a size ending at once on PostgreSQL: each finish's claim saw the other still running, so both
    # ended without the next size claimed (as written here, by hand: no finish hands anything on).
    Run.objects.filter(pk__in=[m.pk for m in members(run_set)[:3]]).update(state=Run.State.SUCCEEDED)
    assert [m.state for m in members(run_set)[3:]] == [Run.State.PENDING] * 3

    with django_capture_on_commit_callbacks():
        assert advancing.advance(run_set.pk) == RunSet.State.RUNNING  # each member's advance comes after its commit

    assert [m.state for m in members(run_set)] == [Run.State.SUCCEEDED] * 3 + [Run.State.QUEUED] * 3


def test_the_end_of_a_size_claims_the_next_sizes_members_together_and_the_curve_is_stored(
    django_capture_on_commit_callbacks,
):
    disks = three_disks()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group_sizes(disks, ProfileFactory(team=disks[0].team))
        before = timezone.now()
        measured(members(run_set)[0], 1000)

        second = members(run_set)[1:3]
        assert [m.state for m in second] == [Run.State.QUEUED] * 2
        assert len({m.not_before for m in second}) == 1 and second[0].not_before >= before + timedelta(seconds=5.4)
        run_set.refresh_from_db()
        assert run_set.explanation.startswith("running size 2 of 3: 2 members start at ")
        assert members(run_set)[3].state == Run.State.PENDING
        for member, iops in zip(second, (1000, 900), strict=True):
            measured(member, iops)

        third = members(run_set)[3:]
        assert [m.state for m in third] == [Run.State.QUEUED] * 3 and len({m.not_before for m in third}) == 1
        for member, iops in zip(third, (700, 700, 650), strict=True):
            measured(member, iops)
        assert advancing.advance(run_set.pk) == RunSet.State.SUCCEEDED

    run_set.refresh_from_db()
    assert run_set.explanation == "finished: 3 of 3 sizes succeeded"
    sizes = run_set.result["sizes"]
    assert [(s["members"], s["total_iops"], s["member_iops"]) for s in sizes] == [
        (1, 1000, [1000]), (2, 1900, [1000, 900]), (3, 2050, [700, 700, 650])
    ]  # fmt: skip
    assert [(s["mean_iops"], s["min_iops"], s["max_iops"]) for s in sizes][1] == (950, 900, 1000)
    # 1900 over 1000 is +90 % per doubling; 2050 over 1900, at 1.5 times the members, +13 %: 2 members do not
    # saturate; nothing came after 3.
    assert run_set.result["saturation"]["members"] is None
    assert run_set.result["saturation"]["text"] == "total IOPS still grew by 10 % or more per doubling up to 3 members"


def test_the_page_draws_the_sizes_and_names_the_saturation_point(
    owner_client, disk, django_capture_on_commit_callbacks
):
    disks = [disk, *(Disk.objects.create(host=disk.host, label=f"d{n}", target_path=f"/data/d{n}",
                                         disk_type="custom") for n in (2, 3, 4))]  # fmt: skip
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group_sizes(disks, ProfileFactory(team=disk.team, name="together"))
        for member, iops in zip(members(run_set), (1000, 1000, 1000, 550, 550, 500, 500), strict=True):
            measured(member, iops)
        advancing.advance(run_set.pk)
    fourth = members(run_set)[3]

    page = owner_client.get(f"/sets/{run_set.pk}/").content.decode()
    run_page = owner_client.get(f"/runs/{fourth.pk}/").content.decode()

    assert f"Group-size sweep {run_set.pk} <span" in page and "1, 2, 4 members" in page
    answer = re.search(r'<p id="sizes-answer"><strong>(.*?)</strong>', page)
    assert answer and answer.group(1) == (
        "From 2 members (2k IOPS, 1k IOPS a member on average) on, no larger group gave 10 % more IOPS per doubling; "
        "the most was 4 members: 2.1k IOPS, +5.0 % per doubling"
    )
    chart = json.loads(re.search(r'<script id="sizes-data" type="application/json">(.*?)</script>', page).group(1))
    assert chart["saturation"] == 2 and chart["final"] is True
    assert [(s["members"], s["total_iops"], s["mean_iops"], s["min_iops"], s["max_iops"]) for s in chart["sizes"]] == [
        (1, 1000, 1000, 1000, 1000), (2, 2000, 1000, 1000, 1000), (4, 2100, 525, 500, 550)
    ]  # fmt: skip
    assert '<span class="knee-mark">saturated</span>' in page and "chart-group-sizes.js" in page
    assert f'id="run-set">member 1 of size 3 (4 members) of group-size sweep {run_set.pk}</a>' in run_page


def test_a_size_that_does_not_all_succeed_ends_the_sweep_partial_and_skips_the_larger_ones(
    django_capture_on_commit_callbacks,
):
    disks = three_disks()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group_sizes(disks, ProfileFactory(team=disks[0].team))
        measured(members(run_set)[0], 1000)
        first, second = members(run_set)[1:3]
        fail(second, "fio exited with status 1")
        assert [m.state for m in members(run_set)[3:]] == [Run.State.SKIPPED] * 3
        measured(first, 1000)
        assert advancing.advance(run_set.pk) == RunSet.State.FAILED

    run_set.refresh_from_db()
    assert run_set.explanation == (
        "partial: 1 of 3 sizes succeeded; member 2 of size 2 (2 members) on host host-2 failed: "
        "fio exited with status 1"
    )
    assert members(run_set)[3].explanation == (
        "skipped: member 2 of size 2 (2 members) ended failed and this group-size sweep stops on a failure"
    )
    sizes = run_set.result["sizes"]
    assert [(s["state"], s["total_iops"]) for s in sizes] == [("succeeded", 1000), ("failed", None), ("skipped", None)]
    assert run_set.result["saturation"]["text"] == "a curve needs at least two group sizes; the sweep has 1"


def test_one_cancel_ends_every_member_of_a_sweep(django_capture_on_commit_callbacks):
    disks = three_disks()
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group_sizes(disks, ProfileFactory(team=disks[0].team))
        run_set = cancelling.cancel(run_set)

    assert run_set.state == RunSet.State.CANCELLED and run_set.explanation == "cancelled: 0 of 3 sizes succeeded"
    assert all(m.state == Run.State.CANCELLED for m in members(run_set))


def test_a_busy_disk_of_the_next_size_makes_the_sweep_wait_saying_which(django_capture_on_commit_callbacks):
    disks = three_disks()
    profile = ProfileFactory(team=disks[0].team)
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group_sizes(disks, profile)
        other = queueing.request_run(disks[1], profile)
        measured(members(run_set)[0], 1000)
        run_set.refresh_from_db()
        assert run_set.state == RunSet.State.RUNNING
        assert run_set.explanation == (
            f"waiting: member 3 (disk b on host host-2): disk busy with run {other.pk}; the members start together"
        )
        states.finish(other, Run.State.SUCCEEDED, "finished", from_states=Run.ACTIVE_STATES)

    assert [m.state for m in members(run_set)[1:3]] == [Run.State.QUEUED] * 2


@pytest.mark.parametrize(
    ("sizes", "third", "field", "message"),
    [
        ([1, 2], {}, "sizes", "The last group size is the number of disks given (3), not 2"),
        (None, {"kind": Disk.Kind.BLOCK, "target_path": "/dev/vdb", "allow_destructive": False}, "disks",
         "Member 3 (disk c on host host-3) is refused, so the whole group is, and nothing was started"),
    ],
)  # fmt: skip
def test_a_sweep_with_bad_sizes_or_a_refused_disk_is_refused_whole_and_nothing_is_written(sizes, third, field, message):
    disks = three_disks(**third)
    with pytest.raises(RunRefused) as refused:
        requesting.request_group_sizes(disks, ProfileFactory(team=disks[0].team, rw="randwrite"), sizes)

    assert refused.value.field == field and str(refused.value).startswith(message)
    assert not RunSet.objects.exists() and not Run.objects.exists()


def test_the_command_starts_a_sweep_and_names_its_page_or_says_why_it_did_not(django_capture_on_commit_callbacks):
    disks = three_disks()
    profile = ProfileFactory(team=disks[0].team)
    ids = [f"--disk={disk.pk}" for disk in disks]
    with pytest.raises(CommandError, match=r"Not started \(sizes\): The group sizes must grow"):
        call_command("run_group_sizes", f"--profile={profile.pk}", *ids, "--sizes=2,1,3")
    assert not RunSet.objects.exists()

    out = io.StringIO()
    with django_capture_on_commit_callbacks():
        call_command("run_group_sizes", f"--profile={profile.pk}", *ids, "--sizes=1,3", stdout=out)

    run_set = RunSet.objects.get()
    assert run_set.plan["sizes"] == [1, 3] and len(members(run_set)) == 4
    assert out.getvalue().startswith(f"group-size sweep {run_set.pk} (/sets/{run_set.pk}/): running size 1 of 2: ")


def test_a_running_sweeps_page_shows_the_sizes_ended_so_far(owner_client, disk, django_capture_on_commit_callbacks):
    other = Disk.objects.create(host=disk.host, label="other", target_path="/data/other", disk_type="custom")
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group_sizes([disk, other], ProfileFactory(team=disk.team))
        measured(members(run_set)[0], 1000)

    page = owner_client.get(f"/sets/{run_set.pk}/").content.decode()

    assert "Size 2 of 2 (2 members) is running; 1 ended." in page
    assert "So far, a curve needs at least two group sizes; the sweep has 1" in page
    chart = json.loads(re.search(r'<script id="sizes-data" type="application/json">(.*?)</script>', page).group(1))
    assert [(s["members"], s["state"], s["total_iops"]) for s in chart["sizes"]] == [
        (1, "succeeded", 1000), (2, "running", None)
    ]  # fmt: skip
    assert chart["final"] is False and 'id="sizes-cancel"' in page
