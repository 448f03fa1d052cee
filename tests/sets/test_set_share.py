"""Share links of a sweep: made from the sweep's page and through the API, the public page showing the sweep
read-only (its facts, both charts' data under the token, no form, no link into the team's pages), revoked and
expired as the other links are, and never a way to another sweep or another team. A group's, once it ended: its
totals, limit and members' figures without the owner's controls, the run pages, the hosts or why a member failed."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from jobs.models import ShareLink
from jobs.models.sharing import digest
from jobs.sets import requesting
from tests.factories import DiskFactory, ProfileFactory
from tests.sets.groups import finished_group
from tests.sets.sweeps import finished_sweep, sweep_profile
from tests.world import make_world, post

pytestmark = pytest.mark.django_db
URL = "/api/v1/share-links/"
# QD 1, 4, 16, 64: a knee at QD 4 under the default rule.
CURVE = [(1000, 100), (1900, 150), (2000, 400), (2050, 900)]


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
def api(ours) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {ours[1]}")


@pytest.fixture
def sweep(ours):
    world = ours[0]
    return finished_sweep(world.disk, sweep_profile(world.team, sweep_axes={"iodepth": "1,4,16,64"}), CURVE)


def _share(api: Client, run_set_id: int, **extra) -> dict:
    response = post(api, URL, {"kind": "sweep", "run_set": run_set_id, **extra})
    assert response.status_code == 201, response.content
    return response.json()


def test_a_sweep_link_shows_the_sweep_read_only_with_its_chart_data(api, ours, sweep):
    made = _share(api, sweep.pk)
    assert made["kind"] == "sweep" and made["run_set"] == sweep.pk and made["disk"] is None
    token = _token(made["url"])

    page = Client().get(f"/s/{token}/")

    html = page.content.decode()
    assert page.status_code == 200 and page["Referrer-Policy"] == "no-referrer" and page["Cache-Control"] == "no-store"
    assert "Read-only shared view" in html and "shared this sweep" in html
    assert f"Sweep {sweep.pk}" in html and "finished: 4 of 4 points succeeded" in html
    assert "knee at QD 4: 1,900 IOPS, p99 150 µs" in html and "The knee is the first point after which" in html
    assert "4 points × 5 s = 20 s" in html and 'class="knee-row"' in html
    assert f'data-series-url="/s/{token}/series.json"' in html
    # No form, no cancel, no address that needs a sign-in (run pages, the disk, the team's JSON, the API).
    for hidden in ["<form", "csrfmiddlewaretoken", "/runs/", "/disks/", f"/sets/{sweep.pk}/", "/api/",
                   ours[0].host.address, ours[0].owner.username]:  # fmt: skip
        assert hidden not in html, hidden

    data = Client().get(f"/s/{token}/series.json").json()
    (curve,) = data["curves"]
    assert data["axis"] == "iodepth" and [p["iops"] for p in curve["points"]] == [1000, 1900, 2000, 2050]
    assert curve["knee"]["axis"] == 4 and data["final"] is True
    assert ShareLink.objects.get(pk=made["id"]).view_count == 1


def test_the_sweep_page_makes_a_link_shown_once_and_the_list_names_the_sweep(ours, sweep):
    browser = Client()
    browser.force_login(ours[0].owner)
    page = browser.get(f"/sets/{sweep.pk}/").content.decode()
    assert 'name="kind" value="sweep"' in page and f'name="run_set" value="{sweep.pk}"' in page

    made = browser.post("/shares/", {"kind": "sweep", "run_set": sweep.pk, "expires_in_days": "30"})

    text = made.content.decode()
    url = re.search(r'<pre class="token" id="share-url">([^<]+)</pre>', text)[1]
    assert Client().get(url).status_code == 200
    assert f'<a href="/sets/{sweep.pk}/">sweep {sweep.pk} (qd sweep on {sweep.disk.label})</a>' in text
    link = ShareLink.objects.get()
    assert link.run_set == sweep and timedelta(days=29, hours=23) < link.expires_at - timezone.now()
    refused = browser.post("/shares/", {"kind": "sweep", "run_set": "", "expires_in_days": "7"})
    assert refused.status_code == 400 and "Say which sweep to share" in refused.content.decode()


def test_a_revoked_sweep_link_answers_410_an_expired_one_410_and_an_unknown_one_404(api, sweep):
    made = _share(api, sweep.pk)
    token = _token(made["url"])
    assert api.delete(f"{URL}{made['id']}/").status_code == 204
    gone = Client().get(f"/s/{token}/")
    assert gone.status_code == 410 and "was revoked" in gone.content.decode()
    assert Client().get(f"/s/{token}/series.json").status_code == 410

    expiring = _token(_share(api, sweep.pk, expires_in_days=1)["url"])
    ShareLink.objects.filter(token_digest=digest(expiring)).update(expires_at=timezone.now() - timedelta(minutes=1))
    expired = Client().get(f"/s/{expiring}/")
    assert expired.status_code == 410 and "expired" in expired.content.decode()
    assert Client().get(f"/s/{expiring}/series.json").status_code == 410
    assert Client().get(f"/s/{'B' * 43}/").status_code == 404


def test_the_token_reaches_neither_another_sweep_nor_another_teams(api, ours, sweep):
    world = ours[0]
    other = finished_sweep(world.disk, sweep_profile(world.team, name="secret sweep",
                           sweep_axes={"iodepth": "2,8"}), [(500, 90), (700, 95)])  # fmt: skip
    theirs = make_world("theirs")[0]
    foreign = finished_sweep(theirs.disk, sweep_profile(theirs.team, name="their sweep"), [(1, 1), (2, 2), (3, 3)])
    token = _token(_share(api, sweep.pk)["url"])

    html = Client().get(f"/s/{token}/?set={other.pk}&pk={foreign.pk}").content.decode()
    data = Client().get(f"/s/{token}/series.json?set={other.pk}").json()
    assert "secret sweep" not in html and "their sweep" not in html and f"Sweep {sweep.pk}" in html
    assert [p["x"] for p in data["curves"][0]["points"]] == [1, 4, 16, 64]
    assert Client().get(f"/s/{token}/distributions.json").status_code == 404
    # Nor can a team share another team's sweep, or a sweep through a disk link.
    refused = post(api, URL, {"kind": "sweep", "run_set": foreign.pk})
    assert refused.status_code == 400 and list(refused.json()) == ["run_set"]
    mixed = post(api, URL, {"kind": "disk", "disk": world.disk.pk, "run_set": sweep.pk})
    assert mixed.status_code == 400 and "disk" in mixed.json()
    nameless = post(api, URL, {"kind": "sweep"}).json()
    assert nameless["run_set"] == ['A sweep link names its sweep, e.g. {"run_set": 12}.']
    assert ShareLink.objects.count() == 1


# ----------------------------------------------------------------------------- groups


def _pair(world):
    return [world.disk, DiskFactory(host=world.host, label="second", spec_iops=2000)]


def test_a_group_shared_from_its_page_shows_its_numbers_read_only(ours):
    world, _ = ours
    group = finished_group(_pair(world), ProfileFactory(team=world.team, name="pair"), [1000, None])
    client = Client()
    client.force_login(world.owner)
    assert 'id="share-box"' in client.get(f"/sets/{group.pk}/").content.decode()

    made = client.post("/shares/", {"kind": "group", "run_set": group.pk, "expires_in_days": 7})
    address = re.search(r"https?://[^\s\"<]+/s/[A-Za-z0-9_-]{43}/", made.content.decode())[0]
    token = address.rstrip("/").rsplit("/", 1)[1]
    shared = Client().get(f"/s/{token}/")
    page = shared.content.decode()

    link = ShareLink.objects.get(run_set=group)
    assert link.kind == "group" and f"group {group.pk} (pair on 2 disks)" in client.get("/shares/").content.decode()
    assert shared.status_code == 200 and "Read-only shared view" in page and "shared this group" in page
    assert "IOPS IOPS" not in page
    assert "1 of 2 members succeeded" in page and "6,000 IOPS" in page and "1,000" in page
    assert "while every member ran" in page and "second" in page
    for private in ("Cancel", "/runs/", "/sets/", world.host.name, world.host.address, "fio exited", "csrf"):
        assert private not in page, private
    series = Client().get(f"/s/{token}/series.json")
    assert series.status_code == 404 and "shows a group" in series.json()["error"]


def test_the_api_shares_a_group_that_ended_and_refuses_a_running_one_or_the_wrong_kind(ours, api):
    world, _ = ours
    profile = ProfileFactory(team=world.team)
    ended = finished_group(_pair(world), profile, [1000, 1000])
    running = requesting.create_group([world.disk, DiskFactory(host=world.host)], profile)

    made = post(api, URL, {"kind": "group", "run_set": ended.pk})
    wrong = post(api, URL, {"kind": "sweep", "run_set": ended.pk})
    early = post(api, URL, {"kind": "group", "run_set": running.pk})

    assert made.status_code == 201 and made.json()["kind"] == "group"
    assert wrong.status_code == 400
    assert wrong.json()["run_set"] == ['A sweep link names its sweep, e.g. {"run_set": 12}.']
    assert early.status_code == 400 and "has not ended" in early.json()["run_set"][0]
