"""Share links in a real headless Chromium: a member makes one with Share… on the disk page, and a browser with
no session opens it. The page draws the disk's charts and compliance from the link's own endpoints; none of the
team's other disks or hosts, nor the host's address or user, appear in its HTML or in any response it received;
it asks /api/ nothing and links nowhere into the team's pages; it fits a phone and a desktop under the site's
CSP. Revoked, and then expired, the same address shows a 410 page. A comparison's link draws its bars and
latency distributions the same way."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from jobs.models import Disk, Host, Profile, Run, RunResult, ShareLink
from jobs.teams import membership as teams
from tests.browser import DESKTOP, PHONE, STICKING_OUT, UNLABELLED_CONTROLS, log_in, wait_until
from tests.factories import RunFactory, fio_summary

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-sharing-password-4"
# What the shared page must never show: the team's other disk and host, and how benchweb logs in to the host.
SECRETS = ["payroll-volume", "/srv/payroll", "finance-db-7", "10.9.8.7", "db-primary.internal.example",
           "svc-bench-login", "sharer"]  # fmt: skip


def _runs(disk: Disk, profile: Profile, nights: int, iops: float, seed: int) -> list[Run]:
    rng = random.Random(seed)
    first = timezone.now().replace(minute=30, second=0, microsecond=0) - timedelta(days=nights)
    made = []
    for night in range(nights):
        finished = first + timedelta(days=night)
        run = RunFactory(disk=disk, profile=profile, state=Run.State.SUCCEEDED, profile_name=profile.name,
                         summary=fio_summary(read_iops=iops * (1 + rng.uniform(-0.25, 0.05))),
                         parameters=profile.parameters(), started_at=finished - timedelta(seconds=60),
                         finished_at=finished, limits_snapshot=disk.limits_snapshot(block_size=4096))  # fmt: skip
        RunResult.record(run)
        made.append(run)
    return made


@pytest.fixture
def world(db) -> dict:
    """A team with the shared disk (14 nightly runs), a second disk on its host and a second host, both with runs."""
    user = User.objects.create_user("sharer", password=PASSWORD)
    team = teams.place_new_user(user).team
    host = Host.objects.create(team=team, name="db-primary-eu-west-1", address="db-primary.internal.example",
                               username="svc-bench-login")  # fmt: skip
    other_host = Host.objects.create(team=team, name="finance-db-7", address="10.9.8.7", username="svc-bench-login")
    shared = Disk.objects.create(host=host, label="ultra-stripe", target_path="/data", disk_type="custom",
                                 spec_iops=5000, spec_bytes_per_s=200_000_000)  # fmt: skip
    payroll = Disk.objects.create(host=host, label="payroll-volume", target_path="/srv/payroll", disk_type="custom",
                                  spec_iops=3000, spec_bytes_per_s=100_000_000)  # fmt: skip
    finance = Disk.objects.create(host=other_host, label="ledger", target_path="/srv/ledger", disk_type="custom",
                                  spec_iops=3000, spec_bytes_per_s=100_000_000)  # fmt: skip
    profile = Profile.objects.create(team=team, name="4k randread QD32", rw="randread", runtime_s=60)
    runs = _runs(shared, profile, 14, 4800, seed=1)
    _runs(payroll, profile, 6, 2900, seed=2)
    _runs(finance, profile, 6, 2800, seed=3)
    return {"user": user, "disk": shared, "payroll": payroll, "runs": runs}


def _make_link(page, live_server, path: str) -> str:
    """Share… on the page at `path`, 30 days: the address the Share links page shows once."""
    page.goto(f"{live_server.url}{path}")
    page.locator("#share-box summary").click()
    page.get_by_label("Expires after").select_option("30")
    page.get_by_role("button", name="Create link").click()
    return page.locator("#share-url").inner_text().strip()


class Stranger:
    """A browser with no session, recording every response its page receives (and its body, where it has one)."""

    def __init__(self, browser, options: dict) -> None:
        self.context = browser.new_context(**options)
        self.context.set_default_timeout(15000)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.responses: list = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        self.page.on("response", lambda response: self.responses.append(response))

    def bodies(self) -> dict[str, str]:
        found = {}
        for response in self.responses:
            try:
                found[response.url] = response.body().decode(errors="replace")
            except Exception:  # Playwright's Error: a redirect or an aborted request has no body to read
                found[response.url] = ""
        return found

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def stranger(browser):
    made: list[Stranger] = []

    def open_one(options: dict = DESKTOP) -> Stranger:
        made.append(Stranger(browser, options))
        return made[-1]

    yield open_one
    for one in made:
        one.close()


def _shows_only_its_own(visitor: Stranger, live_server) -> None:
    page = visitor.page
    assert page.context.cookies() == [] or all(c["name"] != "sessionid" for c in page.context.cookies())
    bodies = visitor.bodies()
    for url, body in bodies.items():
        for secret in SECRETS:
            assert secret not in body, f"{secret!r} in the response of {url}"
    asked = [r.url for r in visitor.responses]
    assert not [url for url in asked if "/api/" in url], asked
    assert all(url.startswith(f"{live_server.url}/s/") or "/static/" in url for url in asked), asked
    hrefs = page.evaluate("[...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href'))")
    assert [h for h in hrefs if not (h.startswith("#") or h.startswith("https://"))] == [], hrefs
    # Only the filters of the charts and the compliance card: GET forms that stay on this page.
    forms = page.evaluate("[...document.forms].map((f) => [f.method, f.getAttribute('action')])")
    assert all(method == "get" and (action or "#").startswith("#") for method, action in forms), forms
    assert page.locator("nav").count() == 0 and page.locator("button[type=submit]").count() == len(forms)
    assert visitor.errors == []  # no script error, and nothing refused by the Content-Security-Policy
    assert page.evaluate(STICKING_OUT) == [] and page.evaluate(UNLABELLED_CONTROLS) == []


def test_a_shared_disk_page_opens_with_no_session_and_shows_that_disk_only(page, live_server, world, stranger,
                                                                         screenshot):  # fmt: skip
    log_in(page, live_server.url, "sharer", PASSWORD)
    url = _make_link(page, live_server, f"/disks/{world['disk'].pk}/")
    assert url.startswith(f"{live_server.url}/s/") and len(url.rstrip("/").rsplit("/", 1)[1]) == 43
    screenshot("made", on=page)

    visitor = stranger()
    answer = visitor.page.goto(url + "?range=all")
    assert answer.status == 200 and answer.headers["referrer-policy"] == "no-referrer"
    assert (
        "noindex" in answer.headers["x-robots-tag"] and "script-src 'self'" in answer.headers["content-security-policy"]
    )
    wait_until(visitor.page, "window.Chart && Chart.getChart('iops-chart') && Chart.getChart('latency-chart')")
    drawn = visitor.page.evaluate("Chart.getChart('iops-chart').data.datasets[0].data.map((p) => p.run)")
    assert sorted(drawn) == sorted(run.pk for run in world["runs"])
    banner = visitor.page.locator("#share-banner").inner_text()
    expires = ShareLink.objects.get().expires_at
    assert "Read-only shared view" in banner and f"{expires:%Y-%m-%d}" in banner and "UTC" in banner
    assert "14 runs against a limit" in visitor.page.locator("#compliance-runs").inner_text()
    assert "ultra-stripe" in visitor.page.locator("h1").inner_text()
    _shows_only_its_own(visitor, live_server)
    series = [r for r in visitor.responses if "/series.json" in r.url]
    assert series and all(r.status == 200 for r in series)
    # The team's own endpoints stay closed to this browser.
    assert visitor.page.request.get(f"{live_server.url}/api/v1/disks/").status == 401
    chart = visitor.page.request.get(f"{live_server.url}/disks/{world['disk'].pk}/series.json", max_redirects=0)
    assert chart.status == 302 and "/login/" in chart.headers["location"]
    visitor.page.locator("#disk-charts").scroll_into_view_if_needed()
    screenshot("desktop", on=visitor.page)

    phone = stranger(PHONE)
    phone.page.goto(url + "?range=all")
    wait_until(phone.page, "window.Chart && Chart.getChart('iops-chart')")
    _shows_only_its_own(phone, live_server)
    screenshot("phone", on=phone.page)

    # Revoked on the Share links page: the same address now says so, with 410.
    page.goto(f"{live_server.url}/shares/")
    page.get_by_role("button", name="Revoke").click()
    assert "revoked" in page.locator("#share-links").inner_text()
    gone = stranger()
    answer = gone.page.goto(url)
    assert answer.status == 410 and "was revoked" in gone.page.locator("#share-gone").inner_text()
    assert gone.bodies()[url].count("ultra-stripe") == 0
    screenshot("revoked", on=gone.page)


def test_an_expired_link_shows_the_410_page(page, live_server, world, stranger, screenshot):
    log_in(page, live_server.url, "sharer", PASSWORD)
    url = _make_link(page, live_server, f"/disks/{world['disk'].pk}/")
    ShareLink.objects.update(expires_at=timezone.now() - timedelta(hours=1))
    visitor = stranger(PHONE)
    answer = visitor.page.goto(url)
    assert answer.status == 410
    assert "expired" in visitor.page.locator("#share-gone").inner_text()
    # Chromium logs the page's own 410 as a failed load; nothing else may go wrong.
    assert [e for e in visitor.errors if "status of 410" not in e] == []
    assert visitor.page.evaluate(STICKING_OUT) == []
    screenshot("expired", on=visitor.page)


def test_a_shared_comparison_draws_its_bars_and_distributions_only(page, live_server, world, stranger, screenshot):
    disk, payroll = world["disk"], world["payroll"]
    shown = world["runs"][-2:]
    log_in(page, live_server.url, "sharer", PASSWORD)
    url = _make_link(page, live_server, f"/compare/?runs={shown[0].pk},{shown[1].pk}")
    visitor = stranger()
    assert visitor.page.goto(url).status == 200
    wait_until(visitor.page, "window.Chart && Chart.getChart('compare-chart')")
    wait_until(visitor.page, "document.getElementById('distributions').dataset.drawn")
    labels = visitor.page.evaluate("Chart.getChart('distributions-cdf').data.datasets.map((d) => d.label)")
    assert labels and all(label.startswith((f"#{shown[0].pk}", f"#{shown[1].pk}")) for label in labels), labels
    _shows_only_its_own(visitor, live_server)
    screenshot("desktop", on=visitor.page)
    phone = stranger(PHONE)
    phone.page.goto(url)
    wait_until(phone.page, "document.getElementById('distributions').dataset.drawn")
    _shows_only_its_own(phone, live_server)
    screenshot("phone", on=phone.page)
    assert disk.pk and payroll.pk


def test_the_share_box_fits_a_phone_on_the_disk_and_compare_pages(phone_page, live_server, world, screenshot):
    runs = world["runs"]
    log_in(phone_page, live_server.url, "sharer", PASSWORD)
    for name, path in [
        ("disk", f"/disks/{world['disk'].pk}/"),
        ("compare", f"/compare/?runs={runs[0].pk},{runs[1].pk}"),
    ]:
        phone_page.goto(f"{live_server.url}{path}")
        box = phone_page.locator("#share-box")
        box.locator("summary").click()
        assert phone_page.get_by_label("Expires after").input_value() == "7"
        assert phone_page.evaluate(STICKING_OUT) == [] and phone_page.evaluate(UNLABELLED_CONTROLS) == []
        box.scroll_into_view_if_needed()
        screenshot(name, on=phone_page)
    assert phone_page.js_errors == []
