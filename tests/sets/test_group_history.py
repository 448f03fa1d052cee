"""A group's limit (the members' limits summed, capped by the plan), its series over time, its history page, and
groups compared side by side."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jobs.sets import group_history
from tests.factories import DiskFactory, ProfileFactory
from tests.sets.groups import finished_group


@pytest.mark.django_db
def test_a_group_without_a_stored_limit_has_it_computed_by_the_rule_of_its_result(disk):
    other = DiskFactory(host=disk.host, with_limits=True)
    group = finished_group([disk, other], ProfileFactory(team=disk.team), [1000, 2000])
    stored = group.result["limit"]
    assert stored["iops"] is not None and stored["binds"] == "members"
    group.result = {key: value for key, value in group.result.items() if key != "limit"}
    found = group_history.limit_of(group)
    assert found == {"iops": stored["iops"], "bytes_per_s": stored["bytes_per_s"], "text": "the members' limits summed"}


def test_a_stored_limit_is_taken_as_it_is():
    run_set = group_history.RunSet(result={"limit": {"iops": 777, "bytes_per_s": None, "how": "stored"}})
    assert group_history.limit_of(run_set, []) == {"iops": 777, "bytes_per_s": None, "text": "stored"}


@pytest.mark.django_db
def test_a_series_is_every_group_of_the_profile_on_the_same_disks_in_any_order(owner_client, disk):
    other = DiskFactory(host=disk.host, with_limits=True)
    third = DiskFactory(host=disk.host, with_limits=True)
    profile = ProfileFactory(team=disk.team, name="together")
    day = datetime(2026, 11, 1, 3, tzinfo=UTC)
    first = finished_group([disk, other], profile, [1000, 2000], at=day)
    second = finished_group([other, disk], profile, [1500, 1500], at=day + timedelta(days=1))
    finished_group([disk, third], profile, [900, 900], at=day + timedelta(days=2))  # other disks
    finished_group([disk, other], ProfileFactory(team=disk.team), [5, 5], at=day + timedelta(days=3))  # other profile

    found = group_history.history(second)

    assert [p["set"] for p in found["points"]] == [first.pk, second.pk]
    assert [p["iops"] for p in found["points"]] == [3000, 3000]
    # The `disk` fixture's limits: 4,000 IOPS a member, 8,000 for two; 3,000 IOPS is 37.5 % of it, shown cut: 37 %.
    assert [p["limit_iops"] for p in found["points"]] == [8000, 8000]
    assert found["points"][0]["share_text"] == "37 %" and found["points"][0]["spread_percent"] == 50.0
    page = owner_client.get(f"/sets/{second.pk}/history/").content.decode()
    assert "2 groups ended" in page and 'id="group-history-data"' in page and "8,000" in page
    group_page = owner_client.get(f"/sets/{second.pk}/").content.decode()
    assert f'href="/sets/{second.pk}/history/"' in group_page
    assert f'href="/sets/compare/groups/?sets={first.pk},{second.pk}"' in group_page


@pytest.mark.django_db
def test_groups_compared_side_by_side_show_totals_limit_spread_and_members(owner_client, disk):
    other = DiskFactory(host=disk.host, with_limits=True)
    profile = ProfileFactory(team=disk.team)
    first = finished_group([disk, other], profile, [1000, 2000])
    second = finished_group([disk, other], profile, [2000, None])

    page = owner_client.get(f"/sets/compare/groups/?sets={first.pk},{second.pk}").content.decode()

    assert "Total while every member ran" in page and "3,000 IOPS" in page and "8,000 IOPS" in page
    assert "37 %" in page and "50.0 %" in page  # 3,000 of 8,000; (2,000 - 1,000) / 2,000
    assert "failed" in page and "member 2" in page
    assert "not all of one profile" not in page


@pytest.mark.django_db
def test_compare_groups_refuses_a_sweep_one_group_or_another_teams_naming_sets(owner_client, disk):
    other = DiskFactory(host=disk.host, with_limits=True)
    group = finished_group([disk, other], ProfileFactory(team=disk.team), [1000, 1000])
    stranger = DiskFactory()
    theirs = finished_group([stranger, DiskFactory(host=stranger.host)], ProfileFactory(team=stranger.team), [1, 1])

    one = owner_client.get(f"/sets/compare/groups/?sets={group.pk}")
    foreign = owner_client.get(f"/sets/compare/groups/?sets={group.pk},{theirs.pk}")
    junk = owner_client.get("/sets/compare/groups/?sets=1,x")

    assert one.status_code == 400 and "Give 2 to 8 groups to compare (sets=12,15); 1 was given." in one.content.decode()
    assert foreign.status_code == 400 and f"No group {theirs.pk} in your team" in foreign.content.decode()
    assert junk.status_code == 400 and "&#x27;x&#x27; is not one" in junk.content.decode()
