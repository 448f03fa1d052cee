"""The disk chart's marks in a real headless Chromium at 1280 and 390 px: a run served from burst is a triangle,
one with warnings has an amber ring, and every point's tooltip says its steady state, its burst and its
warnings (tests/analysis/test_stamps_shown.py checks the data behind them)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from jobs.models import Disk, Host
from tests.analysis.stamps import FRESH, NOT_STEADY, RQ, STEADY, finished
from tests.browser import assert_fits, log_in, settle, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Each point of the first dataset (the profile's total IOPS): its run, how it is drawn, and its tooltip's lines
# as Chart.js shows them when the point is active.
POINTS = """(() => {
  const chart = Chart.getChart('iops-chart');
  return chart.data.datasets[0].data.map((p, index) => {
    const el = chart.getDatasetMeta(0).data[index];
    chart.tooltip.setActiveElements([{ datasetIndex: 0, index }], { x: el.x, y: el.y });
    chart.update('none');
    const lines = chart.tooltip.body.flatMap((b) => [...b.lines, ...b.after]);
    return { run: p.run, style: el.options.pointStyle, border: el.options.borderColor, lines };
  });
})()"""


def stamp_of(lines: list[str]) -> str:
    """The steady state a tooltip says: the end of its first line (on a phone, a line of its own)."""
    said = [found[1] for line in lines if (found := STAMP.search(line))]
    assert len(said) == 1, lines
    return said[0]


STAMP = re.compile(r"(?:^| · )(steady|not steady|steady state not checked)$")


@pytest.mark.parametrize("screen", ["page", "phone_page"])
def test_the_disk_chart_marks_burst_and_warned_runs_and_every_tooltip_says_its_stamps(
    screen, host: Host, owner, request, live_server, screenshot
):
    gp2 = Disk.objects.create(host=host, label="gp2", target_path="/data/gp2", disk_type="aws-gp2", size=20)
    start = datetime.now(UTC) - timedelta(hours=3)
    a = finished(gp2, start=start, seconds=600, iops=3000, steady_state=STEADY, warnings=[FRESH])
    b = finished(gp2, start=start + timedelta(seconds=4200), seconds=1800, iops=3000, steady_state=NOT_STEADY,
                 warnings=[FRESH, RQ])  # fmt: skip
    c = finished(gp2, start=start + timedelta(seconds=6600), seconds=600, iops=100)
    page = request.getfixturevalue(screen)
    log_in(page, live_server.url, owner.username, "a-long-test-password-1")
    page.goto(f"{live_server.url}/disks/{gp2.pk}/?range=all")
    wait_until(page, "window.Chart && Chart.getChart('iops-chart')")
    settle(page)

    drawn = {point["run"]: point for point in page.evaluate(POINTS)}
    # A phone's tooltip gives the balance a line of its own and cuts long warnings short: read the lines as one.
    said = {run: " ".join(point["lines"]) for run, point in drawn.items()}
    assert [drawn[run.pk]["style"] for run in (a, b, c)] == ["triangle", "triangle", "circle"]
    amber = drawn[a.pk]["border"]
    assert drawn[b.pk]["border"] == amber != drawn[c.pk]["border"]
    stamps = [stamp_of(drawn[run.pk]["lines"]) for run in (a, b, c)]
    assert stamps == ["steady", "not steady", "steady state not checked"]
    assert "served from burst (balance at start 5.4 M I/O credits, 100 %)" in said[a.pk]
    assert "⚠ Fresh blocks" in drawn[a.pk]["lines"]
    assert "partly from burst (balance at start 4.02 M I/O credits, 74 %)" in said[b.pk]
    assert "⚠ rq_affinity of nvme1n1 is 1, not 2" in said[b.pk]
    assert "from burst" not in said[c.pk] and "⚠" not in said[c.pk]

    legend = page.evaluate("Chart.getChart('iops-chart').legend.legendItems.map((item) => item.text)")
    assert {"▲ served from burst (fully or partly)", "◯ amber ring: run with warnings"} <= set(legend)
    status = page.locator("#chart-status").inner_text()
    assert "Triangles are runs served from burst credits." in status and "Amber rings are runs with warnings." in status

    # A person's hover shows the same words: the pointer on run b's point.
    page.evaluate("Chart.getChart('iops-chart').tooltip.setActiveElements([], { x: 0, y: 0 })")
    at = page.evaluate("(({ x, y }) => ({ x, y }))(Chart.getChart('iops-chart').getDatasetMeta(0).data[1])")
    page.locator("#iops-chart").scroll_into_view_if_needed()
    box = page.locator("#iops-chart").bounding_box()
    page.mouse.move(box["x"] + at["x"], box["y"] + at["y"])
    wait_until(page, "Chart.getChart('iops-chart').tooltip.opacity > 0")
    hovered = page.evaluate("Chart.getChart('iops-chart').tooltip.body.flatMap((b) => [...b.lines, ...b.after])")
    assert any("partly from burst" in line for line in hovered)
    whole = screenshot(f"disk-chart-marks-{screen}", on=page)
    page.locator("#disk-charts").screenshot(path=str(whole.with_name(f"{whole.stem}-card.png")))
    assert_fits(page, "disk")
    assert page.js_errors == []
