"""A sweep's printable report (/sets/<pk>/report/): its plan, knee and limit sentences, the rule, the points and
its two curves drawn as SVG on the server; its points CSV behind the page's access rule; the links from the page."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs.exports import drawing
from jobs.teams import membership as teams
from tests.sets.sweeps import finished_sweep, sweep_profile

pytestmark = pytest.mark.django_db


@pytest.fixture
def grid_sweep(disk):
    """QD 1-64 x4 at 4k and 64k on the `disk` fixture (4,000 IOPS, 100 MB/s: 1,525 IOPS at 64k)."""
    profile = sweep_profile(disk.team, name="QD × block size", sweep_axes={"block_size_bytes": "4k,64k",
                            "iodepth": "1-64 x4"})  # fmt: skip
    measured = [(900, 120), (2600, 160), (3900, 300), (3950, 1100), (700, 400), (1300, 600), (1500, 1600), (1510, 5200)]
    return finished_sweep(disk, profile, measured)


def test_the_report_holds_the_plan_knees_rule_points_and_both_curves_as_svg(owner_client, grid_sweep):
    html = owner_client.get(f"/sets/{grid_sweep.pk}/report/").content.decode()

    assert f"Sweep {grid_sweep.pk}: QD × block size on disk data" in html
    assert "8 points × 5 s = 40 s" in html and "block size 4k,64k × iodepth 1-64 x4" in html
    assert "knee at QD 16: 3,900 IOPS, p99 300 µs" in html
    assert "limit reached" in html  # 64k reaches 1,525 IOPS, the throughput cap at its block size
    assert "<strong>Rule:</strong> the knee is the first point after which" in html
    # Every time with its zone: created, started, finished and the report's own.
    for field in ("report-created", "report-started", "report-finished"):
        assert re.search(rf'id="{field}"><time datetime="[^"]+">\d{{4}}-\d\d-\d\d \d\d:\d\d [A-Z]', html), field
    along = html[html.index('id="report-along"') : html.index('id="report-along-caption"')]
    assert along.count('<polyline class="curve') == 2 and along.count('<polygon class="knee') == 2
    assert "theoretical at 4k" in along and "theoretical at 64k" in along and "block size 4k — knee at QD 16" in along
    latency = html[html.index('id="report-latency"') : html.index('id="report-latency-caption"')]
    assert latency.count("<polyline") == 6 and "block size 64k — p99.9" in latency and "1 ms" in latency
    table = html[html.index('id="report-points-table"') :]
    for number in ("3,900", "1,510", "5.2 ms", "1,525"):
        assert number in table, number
    assert table.count("<tr") == 9 and "knee</strong>" in table
    assert f'href="/sets/{grid_sweep.pk}/points.csv"' in html


def test_the_report_follows_the_rule_asked_for_and_names_a_bad_one(owner_client, grid_sweep):
    html = owner_client.get(f"/sets/{grid_sweep.pk}/report/?iops_growth=1&p99_growth=500").content.decode()
    assert "no point gives 1 % more IOPS" in html
    bad = owner_client.get(f"/sets/{grid_sweep.pk}/report/?iops_growth=-1")
    assert bad.status_code == 400 and "IOPS growth under (%)" in bad.content.decode()


def test_the_sweep_page_links_its_report_and_its_points_csv(owner_client, grid_sweep):
    page = owner_client.get(f"/sets/{grid_sweep.pk}/?iops_growth=5").content.decode()
    assert f'href="/sets/{grid_sweep.pk}/report/?iops_growth=5" id="set-report"' in page
    assert f'href="/sets/{grid_sweep.pk}/points.csv" download id="set-points-csv"' in page

    answer = owner_client.get(f"/sets/{grid_sweep.pk}/points.csv")

    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/csv")
    rows = b"".join(answer.streaming_content).decode().splitlines()
    assert len(rows) == 9 and "iodepth" in rows[0] and "3900" in rows[3]


def test_another_team_gets_neither_the_report_nor_the_csv(grid_sweep):
    stranger = User.objects.create_user("mallory", password="a-long-test-password-9")
    teams.place_new_user(stranger)
    client = Client()
    client.force_login(stranger)
    assert client.get(f"/sets/{grid_sweep.pk}/report/").status_code == 404
    assert client.get(f"/sets/{grid_sweep.pk}/points.csv").status_code == 404
    assert Client().get(f"/sets/{grid_sweep.pk}/points.csv").status_code == 302


def test_the_curves_are_drawn_in_their_box_with_the_knee_on_its_point():
    curves = [{"label": "", "block_size": "4k", "knee": {"axis": 4, "iops": 1900},
               "points": [{"x": 1, "iops": 1000, "limit_iops": 4000, "burst_iops": 4000, "p50_us": 50, "p99_us": 100},
                          {"x": 4, "iops": 1900, "limit_iops": 4000, "burst_iops": 4000, "p50_us": 75, "p99_us": 150},
                          {"x": 16, "iops": None, "limit_iops": 4000, "burst_iops": 4000}]}]  # fmt: skip
    along = drawing.along_axis(curves, "QD")
    assert along is not None
    measured, limit = along.lines
    assert limit.label == "theoretical at 4k" and len(limit.points.split()) == 3  # burst = baseline: not drawn
    (knee,) = along.marks
    assert knee.label == "knee at QD 4" and f"{knee.x},{knee.y}" == measured.points.split()[1]
    assert [t.text for t in along.x_ticks] == ["1", "4", "16"]
    assert along.y_ticks[-1].at >= along.top and along.y_ticks[0].at == along.bottom
    latency = drawing.latency_against_iops(curves)
    assert latency is not None and [line.label for line in latency.lines] == ["p50", "p99"]
    assert [t.text for t in latency.y_ticks] == ["10 µs", "100 µs", "1 ms"]
    assert drawing.along_axis([{"points": [{"x": 1, "iops": None}]}], "QD") is None
