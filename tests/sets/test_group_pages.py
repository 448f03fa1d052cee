"""A group's page (its state, spread, limit, per-second chart, totals, members side by side and latency) and its
member's run page naming it."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import Disk, Run, RunSample
from jobs.sets import advancing, requesting
from tests.factories import DiskFactory, ProfileFactory
from tests.sets.sweeps import members, succeed

pytestmark = pytest.mark.django_db


def test_a_group_page_shows_its_members_spread_and_totals_and_a_member_names_its_group(
    owner_client, disk, django_capture_on_commit_callbacks
):
    other = Disk.objects.create(host=disk.host, label="other", target_path="/data/other", disk_type="custom")
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group([disk, other], ProfileFactory(team=disk.team))
        Run.objects.filter(run_set=run_set).update(started_at=timezone.now())
        for member, iops in zip(members(run_set), (1000, 2000), strict=True):
            succeed(member, iops, 100)
        advancing.advance(run_set.pk)
    second = members(run_set)[1]

    run_page = owner_client.get(f"/runs/{second.pk}/").content.decode()
    page = owner_client.get(f"/sets/{run_set.pk}/").content.decode()

    assert f'<a href="/sets/{run_set.pk}/" id="run-set">member 2 of 2 of group {run_set.pk}</a>' in run_page
    assert f"Group {run_set.pk} <span" in page
    assert "finished: 2 of 2 members succeeded" in page
    assert "started within 0.00 s ± 0.00 s" in page and "offsets not measured" in page
    assert "each member&#x27;s whole run, summed" in page and "3k" in page
    assert f'<a href="/runs/{second.pk}/">member 2</a>' in page and "Knee" not in page


def test_a_group_page_draws_its_total_against_its_limit_and_sets_its_members_side_by_side(
    owner_client, disk, django_capture_on_commit_callbacks
):
    other = Disk.objects.create(host=disk.host, label="other", target_path="/data/other", disk_type="custom")
    start = timezone.now() - timedelta(seconds=30)
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group([disk, other], ProfileFactory(team=disk.team))
        run_set.plan = run_set.plan | {"cap_iops": 2500}
        run_set.save(update_fields=["plan"])
        first, second = members(run_set)
        # Member 1's host clock was measured 1.2 ms ahead (± 0.4 ms) and it started 50 ms after member 2 by its
        # host's clock: 48.8 ms on the worker's. Member 2's probe failed.
        Run.objects.filter(pk=first.pk).update(
            started_at=start + timedelta(seconds=0.05), limits_snapshot={"effective_iops": 1600.0, "iops": 1600.0},
            clock_offset={"offset_s": 0.0012, "uncertainty_s": 0.0004, "delay_s": 0.0008, "probes": 5},
        )  # fmt: skip
        Run.objects.filter(pk=second.pk).update(
            started_at=start, limits_snapshot={"effective_iops": 1600.0, "iops": 1600.0},
            clock_offset={"why": "offset not measured: the connection dropped"},
        )  # fmt: skip
        for member, iops in zip((first, second), (1000, 2000), strict=True):
            RunSample.objects.bulk_create(RunSample(run=member, t_s=t, read_iops=iops) for t in (1, 2, 3))
            succeed(member, iops, 100 * iops / 1000)
        advancing.advance(run_set.pk)

    page = owner_client.get(f"/sets/{run_set.pk}/").content.decode()

    # The limit: 3,200 IOPS summed, the backend's cap of 2,500 IOPS lower, so it binds; drawn as the chart's line.
    assert "Group limit: <strong>2,500 IOPS (the backend&#x27;s IOPS cap)</strong>" in page
    assert "the members' limits sum to 3,200 IOPS; the backend's IOPS cap is 2,500 IOPS" in page
    chart = json.loads(page.split('<script id="group-chart-data" type="application/json">')[1].split("</script>")[0])
    assert chart["limit_iops"] == 2500 and chart["members"] == 2
    assert [(s["iops"], s["every"]) for s in chart["seconds"]] == [(3000, True)] * 3
    assert 'src="/static/js/chart-group.js"' in page and 'id="group-iops-chart"' in page
    # The spread on the worker's clock, and the member whose offset is not measured named.
    assert "started within 0.0488 s ± 0.0004 s" in page
    assert "offsets not measured for member 2: member 2&#x27;s host clock taken as the worker&#x27;s" in page
    # Members side by side: the slowest and the worst p99 named, the spread in %, each one's start and clock.
    assert "Slowest: <strong>member 1</strong>" in page and "Worst p99: <strong>member 2</strong>" in page
    assert "Spread of their IOPS: <strong>50.0 %</strong>" in page
    table = page.split('id="group-members-table"')[1].split("</table>")[0]
    rows = table.split("<tr>")[2:]
    assert '<span class="knee-mark">slowest</span>' in rows[0] and "worst p99" in rows[1]
    assert ">0.0488 s<" in rows[0] and ">0.0000 s<" in rows[1]
    assert "+0.0012 s ± 0.0004 s" in rows[0] and ">not measured<" in rows[1]
    assert "offset not measured: the connection dropped" in rows[1]
    # The latency: fio's plain JSON has no bins, so not merged, the worst and the median member's p99.
    assert "not merged: member 1, member 2 have no json+ latency bins" in page
    latency = page.split('id="group-latency"')[1]
    assert '<th scope="row">p99</th>' in latency and ">200 µs<" in latency and ">150 µs<" in latency


def test_another_teams_group_is_a_404(owner_client):
    first = DiskFactory()
    second = DiskFactory(host=first.host)
    run_set = requesting.create_group([first, second], ProfileFactory(team=first.team))
    assert owner_client.get(f"/sets/{run_set.pk}/").status_code == 404


def test_a_finished_group_is_not_offered_for_comparing_sweeps(owner_client, disk, django_capture_on_commit_callbacks):
    other = Disk.objects.create(host=disk.host, label="other", target_path="/data/other", disk_type="custom")
    with django_capture_on_commit_callbacks():
        run_set = requesting.request_group([disk, other], ProfileFactory(team=disk.team, name="together"))
        for member in members(run_set):
            succeed(member, 1000, 100)
        advancing.advance(run_set.pk)

    assert "together" not in owner_client.get("/sets/compare/").content.decode()
    page = owner_client.get(f"/sets/compare/?a_disk={disk.pk}&b_disk={other.pk}&profile=together")
    assert (
        page.status_code == 400 and "No finished sweep of &#x27;together&#x27; on either side" in page.content.decode()
    )
