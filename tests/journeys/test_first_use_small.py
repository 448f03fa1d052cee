"""The small things a first-time user tripped on (issue 29, item 9): a mail subject that said its kind twice, the
token form's expiry error under the Name field, "spec?." on the run page, "any to any GB" in the disk types, the
API docs' "Bearer '" and a Mark expected without a reason. The pages at 1,280 and 390 px in a real Chromium."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from jobs import limits
from jobs.disks.forms import size_range
from jobs.models import Disk
from jobs.notify import texts
from jobs.teams import membership as teams
from tests.browser import STICKING_OUT, UNLABELLED_CONTROLS, log_in
from tests.factories import RunFactory, fio_summary

PASSWORD = "a-long-small-fixes-password-29"


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_an_alert_s_mail_subject_says_its_kind_once():
    event = {"event": "opened", "alert": {"kind": "run_failed", "title": "Run failed: 4k randread on vm1:data"}}
    assert texts.subject(event) == "[benchweb] OPEN run failed: 4k randread on vm1:data"
    regression = {"event": "resolved", "alert": {"kind": "regression", "title": "Regression: 4k randread on vm1:data"}}
    assert texts.subject(regression) == "[benchweb] RESOLVED regression: 4k randread on vm1:data"
    # A title that does not start with the kind keeps every word.
    other = {"event": "opened", "alert": {"kind": "stale", "title": "disk data on vm1: no run for 3 days"}}
    assert texts.subject(other) == "[benchweb] OPEN stale: disk data on vm1: no run for 3 days"


def test_a_disk_type_without_size_bounds_says_so_instead_of_any_to_any():
    kinds = {kind.id: kind for kind in limits.disk_types()}
    assert size_range(kinds["ibm-powervs-tier0"]) == "any size in GB"
    assert size_range(kinds["ibm-powervs-fixed5k"]) == "up to 200 GB"
    assert size_range(kinds["alibaba-essd-pl3"]).endswith("to 65,536 GiB")
    assert not [kind.id for kind in kinds.values() if "any to" in size_range(kind) or "to any" in size_range(kind)]


@pytest.mark.django_db
def test_the_disk_form_lists_no_size_range_as_any_to_any(owner_client, host):
    page = owner_client.get(f"/hosts/{host.pk}/disks/new/").content.decode()
    assert "any to any" not in page and "any size in GB" in page


@pytest.mark.django_db
def test_the_run_page_s_flag_above_the_promise_ends_without_a_stray_full_stop(owner_client, host):
    gp2 = Disk.objects.create(host=host, label="gp2", target_path="/gp2", disk_type="aws-gp2", size=33)
    run = RunFactory(disk=gp2, succeeded=True, recorded=True, profile_name="4k randread",
                     summary=fio_summary(read_iops=40167), limits_snapshot=gp2.limits_snapshot(4096))  # fmt: skip
    page = _text(owner_client.get(f"/runs/{run.pk}/").content.decode())
    assert "above the promise: cache, burst or a wrong spec?" in page
    assert "spec?." not in page.replace(" ", "")


@pytest.mark.django_db
def test_the_api_schema_gives_the_token_header_in_code_spans_the_docs_page_keeps(owner_client):
    schema = owner_client.get("/api/schema/?format=json").json()
    assert "`Authorization: Bearer <token>`" in schema["info"]["description"]
    refusals = [r["description"] for path in schema["paths"].values() for op in path.values() for r in
                op.get("responses", {}).values() if "token" in r.get("description", "")]  # fmt: skip
    assert refusals and all("`Authorization: Bearer <token>`" in text for text in refusals)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_the_token_form_s_expiry_error_sits_under_the_expiry_field(width, page, phone_page, live_server, screenshot):
    tab = page if width == "desktop" else phone_page
    user = User.objects.create_user(f"tokens-{width}", password=PASSWORD)
    teams.place_new_user(user)
    log_in(tab, live_server.url, f"tokens-{width}", PASSWORD)
    tab.goto(f"{live_server.url}/account/tokens/")
    tab.get_by_label("Name").fill("nightly CI")
    tab.get_by_label("Expires after (days)").fill("0")
    # The browser's own min check would stop the form before the server sees it: the server's error is the one shown.
    tab.locator("form:has(#id_days)").evaluate("form => form.setAttribute('novalidate', '')")
    tab.get_by_role("button", name="Create token").click()
    tab.wait_for_load_state()
    error = tab.locator(".errorlist").first
    assert "greater than or equal to 1" in error.inner_text()
    assert tab.locator("#row-days .errorlist").count() == 1 and tab.locator("#row-name .errorlist").count() == 0
    days = tab.locator("#id_days").bounding_box()
    name = tab.locator("#id_name").bounding_box()
    shown = error.bounding_box()
    assert shown["y"] > days["y"] > name["y"], "the error reads under the expiry field, not under Name"
    assert tab.evaluate(STICKING_OUT) == [] and tab.evaluate(UNLABELLED_CONTROLS) == []
    screenshot(f"tokens-{width}", on=tab)
    assert tab.js_errors == []


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_the_api_docs_show_the_bearer_header_whole(width, page, phone_page, live_server, screenshot):
    tab = page if width == "desktop" else phone_page
    tab.goto(f"{live_server.url}/api/docs/")
    tab.wait_for_selector(".opblock-summary-path")
    description = " ".join(tab.locator(".info .description").inner_text().split())
    assert "Authorization: Bearer <token>" in description
    assert "Bearer '" not in tab.locator("body").inner_text()
    screenshot(f"docs-{width}", on=tab)
    assert tab.js_errors == []
