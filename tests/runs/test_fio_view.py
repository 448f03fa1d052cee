"""fio's own view on the run page and in the runs API: its cpu line as printed, the CPU µs per I/O and each disk
util line, from real fio output; in a real Chromium on a desktop (1280 px) and a phone (390 px)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
from django.contrib.auth.models import User
from drf_spectacular.generators import SchemaGenerator

from jobs.models import Membership
from jobs.runs.storing import stored_summary
from jobs.tools import fio
from tests.browser import STICKING_OUT, UNLABELLED_CONTROLS, log_in
from tests.factories import DiskFactory, HostFactory, RunFactory, TeamFactory
from tests.openapi import json_schema
from tests.world import client_for, make_world

FIXTURES = Path(__file__).parent.parent / "fixtures"
PASSWORD = "a-long-fio-view-password-7"


def summary_of(name: str, parse=fio.parse_fio_json) -> dict:
    return stored_summary(parse((FIXTURES / name).read_text()).summary_with_bins())


@pytest.mark.django_db
def test_the_run_detail_gives_fios_cpu_cost_and_disks_as_its_schema_says() -> None:
    world, secret = make_world("fio-view")
    run = RunFactory(disk=world.disk, succeeded=True, summary=summary_of("fio-3.33-randrw.json"))
    older = RunFactory(disk=world.disk, succeeded=True)  # a summary from before benchweb kept fio's view

    schema = json_schema(SchemaGenerator().get_schema(request=None, public=True))
    bodies = []
    for shown in (run, older):
        body = client_for(secret).get(f"/api/v1/runs/{shown.pk}/").json()
        jsonschema.validate(body, {"$ref": "#/components/schemas/RunDetail", "components": schema["components"]})
        bodies.append(body["result"])

    result, old = bodies
    assert result["cpu"] == {
        "usr_percent": 3.233333, "sys_percent": 22.833333, "ctx": 83298, "majf": 0, "minf": 14, "job_runtime_ms": 3000,
    }  # fmt: skip
    assert result["cpu_us_per_io"] == pytest.approx((3.233333 + 22.833333) / 100 * 3000 * 1000 / (58365 + 24931))
    assert [(d["name"], d["util_percent"], d["read_ios"], d["write_ios"]) for d in result["disk_util"]] == [
        ("vda", 78.554049, 53903, 23140)
    ]
    assert result["printed"]["cpu"]["sys"] == "22.833333%"
    assert (old["cpu"], old["cpu_us_per_io"], old["disk_util"]) == (None, None, [])
    properties = schema["components"]["schemas"]["RunResult"]["properties"]
    assert {"cpu", "cpu_us_per_io", "disk_util"} <= set(properties)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("screen", ["page", "phone_page"])
def test_fios_own_view_is_shown_on_the_run_page_on_a_desktop_and_a_phone(request, screen, live_server, screenshot):
    page = request.getfixturevalue(screen)
    team = TeamFactory(name="view team")
    user = User.objects.create_user("viewer", password=PASSWORD)
    Membership.objects.create(user=user, team=team, role=Membership.Role.OWNER)
    disk = DiskFactory(host=HostFactory(team=team, name="vm1"), label="data")
    printed = RunFactory(disk=disk, succeeded=True, summary=summary_of("fio-3.33-randrw.txt", fio.parse_fio_text))
    combined = RunFactory(disk=disk, succeeded=True, summary=summary_of("fio-3.33-numjobs2.txt", fio.parse_fio_text))
    log_in(page, live_server.url, "viewer", PASSWORD)

    page.goto(f"{live_server.url}/runs/{printed.pk}/")
    view = page.locator("#run-fio-view")
    # "  cpu          : usr=4.83%, sys=33.10%, ctx=72885, majf=0, minf=11"
    assert page.locator("#run-fio-cpu").inner_text() == "usr=4.83%, sys=33.10%, ctx=72885"
    cost = (4.83 + 33.1) / 100 * 3001 * 1000 / (51010 + 21895)  # "issued rwts: total=51010,21895,0,0"
    assert page.locator("#run-fio-cpu-per-io").inner_text().startswith(f"{cost:.3g} µs of fio's user + system CPU")
    # "  vda: ios=49546/21160, merge=0/0, ticks=1522/539, in_queue=2062, util=69.69%"
    cells = page.locator("#run-fio-disks tbody tr").first.locator("th, td").all_inner_texts()
    assert [cell.strip() for cell in cells] == ["vda", "69.69%", "49546/21160"]
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], page.evaluate(STICKING_OUT)
    assert page.evaluate(UNLABELLED_CONTROLS) == []
    assert page.js_errors == []
    view.scroll_into_view_if_needed()
    screenshot("printed", page)

    page.goto(f"{live_server.url}/runs/{combined.pk}/")
    # Two jobs' lines, ctx=62950 and ctx=62981: their sum, and no share fio's clocks would be needed for.
    assert page.locator("#run-fio-cpu").inner_text() == "ctx=125931 (combined from the jobs' own lines)"
    assert page.locator("#run-fio-cpu-per-io").inner_text().startswith("— not computable: it takes fio's usr and sys")
    screenshot("combined", page)
