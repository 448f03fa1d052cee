"""Share links: made, listed and revoked through the API and the pages, per team and role; the public pages they
open without an account (only their target's data, 410 once expired or revoked, 404 for an unknown token, the
guard against guessing) and the headers those pages carry."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from jobs.models import Membership, ShareLink
from jobs.models.sharing import digest
from jobs.results import stats
from jobs.shares import public
from tests.factories import DiskFactory, HostFactory, RunFactory, fio_summary
from tests.world import add_member, make_world, post

pytestmark = pytest.mark.django_db
URL = "/api/v1/share-links/"


def _token(url: str) -> str:
    found = re.search(r"/s/([A-Za-z0-9_-]{43})/$", url)
    assert found, url
    return found[1]


@pytest.fixture(autouse=True)
def no_guesses_counted():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def ours():
    return make_world("ours")


@pytest.fixture
def theirs():
    return make_world("theirs", password="their-canary-password")


@pytest.fixture
def api(ours) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {ours[1]}")


def _share_disk(api: Client, disk_id: int, **extra) -> dict:
    response = post(api, URL, {"kind": "disk", "disk": disk_id, **extra})
    assert response.status_code == 201, response.content
    return response.json()


def test_a_disk_link_is_made_shown_once_and_stored_as_a_digest_only(api, ours):
    world = ours[0]
    made = _share_disk(api, world.disk.pk)
    token = _token(made["url"])
    link = ShareLink.objects.get(pk=made["id"])
    assert link.token_digest == digest(token) and token not in str(link.__dict__)
    assert made["state"] == "active" and made["created_by"] == world.owner.username
    assert timedelta(days=6, hours=23) < link.expires_at - timezone.now() <= timedelta(days=7)
    listed = api.get(URL).json()["results"]
    assert [row["id"] for row in listed] == [made["id"]] and "url" not in listed[0]
    assert token not in api.get(URL).content.decode()
    event = AuditEvent.objects.get(action=AuditEvent.Action.SHARE_CREATED)
    assert event.team == world.team and token not in str(event.details)


@pytest.mark.parametrize("days", [0, 91, -3, "seven", 2.5])
def test_a_bad_expiry_is_refused_naming_the_field(api, ours, days):
    response = post(api, URL, {"kind": "disk", "disk": ours[0].disk.pk, "expires_in_days": days})
    assert response.status_code == 400
    body = response.json()
    assert list(body) == ["expires_in_days"], body
    assert not ShareLink.objects.exists()


def test_a_comparison_link_keeps_its_checked_query(api, ours):
    world = ours[0]
    other = DiskFactory(host=world.host, label="logs")
    made = post(api, URL, {"kind": "compare", "compare": {"disks": [world.disk.pk, other.pk], "metric": "bandwidth"},
                           "expires_in_days": 30})  # fmt: skip
    assert made.status_code == 201, made.content
    link = ShareLink.objects.get(pk=made.json()["id"])
    assert link.compare == {"disks": [world.disk.pk, other.pk], "metric": "bandwidth"}
    assert timedelta(days=29, hours=23) < link.expires_at - timezone.now() <= timedelta(days=30)
    html = Client().get(f"/s/{_token(made.json()['url'])}/").content.decode()
    # The Statistics card with the shared choices, read-only: neither its form nor the before/after one.
    assert 'id="statistics"' in html and "bandwidth" in html
    assert 'class="stats-form"' not in html and 'id="before-after"' not in html and "<form" not in html


def test_a_comparison_of_another_teams_disk_or_of_one_disk_is_refused(api, ours, theirs):
    mine, foreign = ours[0].disk.pk, theirs[0].disk.pk
    for compare, words in [({"disks": [mine, foreign]}, f"No disk {foreign} in your team"),
                           ({"disks": [mine]}, "2 to 8 disks; 1 were given"),
                           ({"disks": [mine], "runs": [ours[0].run.pk]}, "one of them")]:  # fmt: skip
        response = post(api, URL, {"kind": "compare", "compare": compare})
        assert response.status_code == 400 and words in response.json()["compare"][0], response.content
    assert not ShareLink.objects.exists()


def test_another_team_can_neither_share_see_nor_revoke(api, ours, theirs):
    made = _share_disk(api, ours[0].disk.pk)
    them = Client(HTTP_AUTHORIZATION=f"Bearer {theirs[1]}")
    assert post(them, URL, {"kind": "disk", "disk": ours[0].disk.pk}).status_code == 400
    assert them.get(URL).json()["results"] == []
    assert them.get(f"{URL}{made['id']}/").status_code == 404
    assert them.delete(f"{URL}{made['id']}/").status_code == 404
    assert ShareLink.objects.get(pk=made["id"]).revoked_at is None


def test_viewers_list_links_but_only_members_make_and_revoke_them(api, ours):
    made = _share_disk(api, ours[0].disk.pk)
    _, viewer = add_member(ours[0], Membership.Role.VIEWER)
    _, member = add_member(ours[0], Membership.Role.MEMBER)
    assert [row["id"] for row in viewer.get(URL).json()["results"]] == [made["id"]]
    assert post(viewer, URL, {"kind": "disk", "disk": ours[0].disk.pk}).status_code == 403
    assert viewer.delete(f"{URL}{made['id']}/").status_code == 403
    assert member.delete(f"{URL}{made['id']}/").status_code == 204
    assert api.get(f"{URL}{made['id']}/").json()["state"] == "revoked"


def test_a_shared_disk_page_opens_without_an_account_and_shows_only_that_disk(api, ours, theirs):
    world = ours[0]
    secret_disk = DiskFactory(host=world.host, label="payroll-volume", target_path="/srv/payroll")
    other_host = HostFactory(team=world.team, name="finance-db-7", address="10.9.8.7")
    world.host.address, world.host.username = "db-primary.internal.example", "svc-login-77"
    world.host.save()
    theirs[0].disk.label = "their-archive"
    theirs[0].disk.save()
    token = _token(_share_disk(api, world.disk.pk)["url"])
    page = Client().get(f"/s/{token}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Read-only shared view" in html and world.disk.label in html
    for hidden in ["payroll-volume", "/srv/payroll", "finance-db-7", "10.9.8.7", world.host.address,
                   world.host.username, world.owner.username, theirs[0].disk.label, "/runs/", "/hosts/", "/api/",
                   "csrfmiddlewaretoken", 'method="post"']:  # fmt: skip
        assert hidden not in html, hidden
    assert page["Referrer-Policy"] == "no-referrer" and page["X-Robots-Tag"] == "noindex, nofollow"
    assert page["Cache-Control"] == "no-store" and "Content-Security-Policy" in page
    assert secret_disk.pk and other_host.pk
    series = Client().get(f"/s/{token}/series.json?range=all")
    assert series.status_code == 200 and series["Referrer-Policy"] == "no-referrer"
    assert [s["runs"] for s in series.json()["series"]] == [1]
    link = ShareLink.objects.get()
    assert link.view_count == 1 and link.last_viewed_at is not None


def test_the_teams_own_chart_endpoint_and_api_still_need_a_sign_in(api, ours):
    token = _token(_share_disk(api, ours[0].disk.pk)["url"])
    anonymous = Client()
    assert anonymous.get(f"/disks/{ours[0].disk.pk}/series.json").status_code == 302
    assert anonymous.get(f"/api/v1/disks/{ours[0].disk.pk}/series/").status_code == 401
    assert anonymous.get(f"/s/{token}/series.json").status_code == 200


def test_a_revoked_or_expired_link_answers_410_and_an_unknown_one_404(api, ours):
    made = _share_disk(api, ours[0].disk.pk)
    token = _token(made["url"])
    assert api.delete(f"{URL}{made['id']}/").status_code == 204
    gone = Client().get(f"/s/{token}/")
    assert gone.status_code == 410 and "was revoked" in gone.content.decode()
    assert gone["Referrer-Policy"] == "no-referrer"
    assert Client().get(f"/s/{token}/series.json").status_code == 410
    expiring = _token(_share_disk(api, ours[0].disk.pk, expires_in_days=1)["url"])
    ShareLink.objects.filter(token_digest=digest(expiring)).update(expires_at=timezone.now() - timedelta(minutes=1))
    expired = Client().get(f"/s/{expiring}/")
    assert expired.status_code == 410 and "expired" in expired.content.decode()
    assert re.search(r"expired \d{4}-\d\d-\d\d \d\d:\d\d [A-Z]", expired.content.decode())  # with its zone
    unknown = Client().get(f"/s/{'A' * 43}/")
    assert unknown.status_code == 404 and "No link has this address" in unknown.content.decode()
    assert ShareLink.objects.get(pk=made["id"]).view_count == 0


def test_an_address_guessing_tokens_is_told_to_wait_and_its_valid_links_still_open(api, ours):
    token = _token(_share_disk(api, ours[0].disk.pk)["url"])
    guesser = Client()
    for i in range(public.GUESS_LIMIT):
        assert guesser.get(f"/s/{'x' * 42}{i % 10}/").status_code == 404
    assert guesser.get(f"/s/{'y' * 43}/").status_code == 429
    assert guesser.get(f"/s/{'y' * 43}/series.json").status_code == 429

    # The limit is on guesses: a link someone was sent opens from that address (an office behind one NAT).
    page = guesser.get(f"/s/{token}/")
    assert page.status_code == 200 and ours[0].disk.label in page.content.decode()
    assert guesser.get(f"/s/{token}/series.json").status_code == 200
    assert guesser.get(f"/s/{'z' * 43}/").status_code == 429  # and the next guess still waits
    assert Client(REMOTE_ADDR="192.0.2.7").get(f"/s/{'z' * 43}/").status_code == 404  # another address: its own count
    assert ShareLink.objects.get(token_digest=digest(token)).view_count == 1


def test_a_shared_comparison_shows_its_runs_and_its_distributions_only(api, ours):
    world = ours[0]
    second = RunFactory(disk=world.disk, profile=world.profile, succeeded=True, recorded=True,
                        summary=fio_summary(read_iops=3500))  # fmt: skip
    hidden = RunFactory(disk=world.disk, profile=world.profile, succeeded=True, recorded=True,
                        summary=fio_summary(read_iops=100))  # fmt: skip
    made = post(api, URL, {"kind": "compare", "compare": {"runs": [world.run.pk, second.pk]}})
    token = _token(made.json()["url"])
    page = Client().get(f"/s/{token}/")
    html = page.content.decode()
    assert page.status_code == 200 and f"#{second.pk}" in html and f"#{hidden.pk}" not in html
    assert 'data-url="distributions.json?runs=' in html and "/compare/" not in html
    answer = Client().get(f"/s/{token}/distributions.json?runs={hidden.pk},{world.run.pk}")
    assert answer.status_code == 200
    # The query names a run outside the link: the link's own runs are drawn (the first reported no percentiles).
    assert [s["run"] for s in answer.json()["series"]] == [second.pk]
    second.delete()
    assert Client().get(f"/s/{token}/").status_code == 410


def test_the_share_form_on_the_disk_page_makes_a_link_shown_once(ours):
    world = ours[0]
    browser = Client()
    browser.force_login(world.owner)
    assert 'id="share-box"' in browser.get(f"/disks/{world.disk.pk}/").content.decode()
    made = browser.post("/shares/", {"kind": "disk", "disk": world.disk.pk, "expires_in_days": "30"})
    assert made.status_code == 200 and made["Cache-Control"] == "no-store"
    url = re.search(r'<pre class="token" id="share-url">([^<]+)</pre>', made.content.decode())[1]
    assert Client().get(url).status_code == 200
    assert url not in browser.get("/shares/").content.decode()
    refused = browser.post("/shares/", {"kind": "disk", "disk": world.disk.pk, "expires_in_days": "365"})
    assert refused.status_code == 400 and "1, 7, 30 or 90 days" in refused.content.decode()
    link = ShareLink.objects.get()
    browser.post(f"/shares/{link.pk}/revoke")
    assert Client().get(url).status_code == 410


def test_the_compare_page_shares_the_query_it_shows(ours):
    world = ours[0]
    other = DiskFactory(host=world.host, label="logs")
    browser = Client()
    browser.force_login(world.owner)
    query = f"disks={world.disk.pk}&disks={other.pk}&metric=bandwidth"
    assert 'id="share-box"' in browser.get(f"/compare/?{query}").content.decode()
    made = browser.post("/shares/", {"kind": "compare", "query": query, "expires_in_days": "7"})
    assert made.status_code == 200, made.content
    assert ShareLink.objects.get().compare == {"disks": [world.disk.pk, other.pk], "metric": "bandwidth"}
    listed = browser.get("/shares/").content.decode()
    assert f'href="/compare/?disks={world.disk.pk}%2C{other.pk}&amp;metric=bandwidth"' in listed


def test_a_viewer_sees_no_share_form_and_cannot_post_one(ours):
    viewer, _ = add_member(ours[0], Membership.Role.VIEWER)
    browser = Client()
    browser.force_login(viewer)
    assert 'id="share-box"' not in browser.get(f"/disks/{ours[0].disk.pk}/").content.decode()
    response = browser.post("/shares/", {"kind": "disk", "disk": ours[0].disk.pk, "expires_in_days": "7"})
    assert response.status_code == 403 and not ShareLink.objects.exists()


def test_the_schemas_name_for_the_compare_metrics_lists_them_all():
    overrides = settings.SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]
    assert overrides["CompareMetricEnum"] == list(stats.METRICS)
