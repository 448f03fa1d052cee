"""A group's exports: its CSV (a row a member, a row a total with its window, its limit), the same rows as JSON
through the API, and its printable report (totals, limit, spread, members, its series over time), instead of a
sweep's points."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest

from jobs.models import Disk
from tests.factories import DiskFactory, ProfileFactory
from tests.sets.groups import finished_group
from tests.world import client_for, make_world

pytestmark = pytest.mark.django_db


def _rows(response) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def _group(disk: Disk, iops=(1000, None)):
    other = DiskFactory(host=disk.host, label="second", spec_iops=2000)
    return finished_group([disk, other], ProfileFactory(team=disk.team, name="pair"), list(iops))


def test_a_groups_csv_has_a_row_a_member_a_row_a_total_with_its_window_and_its_limit(owner_client, disk):
    run_set = _group(disk)
    first, second = run_set.members.order_by("set_index")

    response = owner_client.get(f"/sets/{run_set.pk}/points.csv")
    rows = _rows(response)

    assert f"benchweb-group-{run_set.pk}-members-pair-" in response["Content-Disposition"]
    assert [(r["row"], r["member"], r["run_id"], r["disk"], r["state"], r["iops"]) for r in rows[:2]] == [
        ("member", "member 1", str(first.pk), disk.label, "succeeded", "1000"),
        ("member", "member 2", str(second.pk), "second", "failed", ""),
    ]
    assert rows[0]["host"] == disk.host.name and rows[0]["p99_us"] == "900" and rows[0]["started_at_utc"].endswith("Z")
    totals = [r for r in rows if r["row"] == "total"]
    assert [r["member"] for r in totals] == [
        "while every member ran (from the last start to the first end)", "each member's whole run, summed",
        "all the members' I/O from the first start to the last end",
    ]  # fmt: skip
    assert totals[0]["iops"] == "1000" and totals[0]["window_seconds"] == "10" and totals[0]["window_end_utc"]
    assert totals[1]["window_start_utc"] == ""  # each member's own window
    # The limit of the members counted (those that succeeded), as the totals are: the `disk` fixture's 4,000 IOPS.
    assert rows[-1]["row"] == "limit" and rows[-1]["iops"] == "4000" and "members' limits summed" in rows[-1]["note"]


def test_the_api_gives_a_groups_rows_as_json_and_another_teams_as_a_404():
    world, secret = make_world("ours")
    api = client_for(secret)
    run_set = _group(world.disk, (1000, 2000))
    theirs, _ = make_world("theirs")
    their_set = _group(theirs.disk)

    body = api.get(f"/api/v1/sets/{run_set.pk}/export/").json()
    csv_rows = _rows(api.get(f"/api/v1/sets/{run_set.pk}/points.csv"))

    assert body["kind"] == "group" and body["columns"][:3] == ["row", "member", "run_id"]
    assert [row["iops"] for row in body["rows"]] == [1000, 2000, 3000, 3000, 3000, 6000]
    assert body["rows"][1]["host"] == "vm" and body["rows"][2]["window_seconds"] == 10
    assert len(csv_rows) == len(body["rows"])
    assert api.get(f"/api/v1/sets/{their_set.pk}/export/").status_code == 404


def test_a_groups_report_shows_totals_with_windows_limit_spread_members_and_its_series(owner_client, disk):
    other = DiskFactory(host=disk.host, label="second", spec_iops=2000)
    profile = ProfileFactory(team=disk.team, name="pair")
    day = datetime(2026, 11, 2, 3, tzinfo=UTC)
    finished_group([disk, other], profile, [4000, 2000], at=day)
    run_set = finished_group([other, disk], profile, [1000, 2000], at=day + timedelta(days=1))

    page = owner_client.get(f"/sets/{run_set.pk}/report/").content.decode()

    assert f"Group {run_set.pk}: pair on 2 disks" in page and "group report" in page
    assert "while every member ran (from the last start to the first end)" in page and "10.0 s" in page
    assert "IOPS IOPS" not in page
    assert "6,000 IOPS" in page and "the members&#x27; limits summed" in page and "<strong>50 %</strong>" in page
    assert "spread 50.0 %" in page and "slowest member 1" in page
    assert 'id="report-history"' in page and "2 groups ended" in page
    assert "1,000" in page and "second" in page and "Knee" not in page and "The points" not in page
