"""The Compare sweeps page: two disks' sweeps of a profile, curve on curve, their chart JSON in the sweep page's
shape (drawn by the same script), and a bad parameter named on the page."""

from __future__ import annotations

import pytest

from tests.factories import DiskFactory
from tests.sets.sweeps import run_sweep, sweep_profile

pytestmark = pytest.mark.django_db


def test_the_page_shows_both_sides_knees_and_every_points_comparison(
    owner_client, team, host, django_capture_on_commit_callbacks
):
    a, b = DiskFactory(host=host, label="old"), DiskFactory(host=host, label="new")
    profile = sweep_profile(team, name="QD sweep")
    for i in range(5):
        run_sweep(a, profile, [(1000 + i, 100), (1900 + i, 150), (2000 + i, 400)], django_capture_on_commit_callbacks)
        run_sweep(b, profile, [(1000 + i, 100), (1520 + i, 150), (1600 + i, 400)], django_capture_on_commit_callbacks)
    query = f"a_disk={a.pk}&b_disk={b.pk}&profile=QD+sweep"

    page = owner_client.get(f"/sets/compare/?{query}")
    series = owner_client.get(f"/sets/compare/series.json?{query}").json()

    assert page.status_code == 200
    text = page.content.decode()
    assert "Knee IOPS: B: new is 20 % slower than A: old" in text
    assert "A: old: knee at QD 4: 1,902 IOPS, p99 150 µs" in text
    assert "1,522 IOPS (5)" in text
    assert f'data-series-url="/sets/compare/series.json?{query.replace("&", "&amp;")}"' in text
    assert series["axis_name"] == "QD"
    assert [c["label"] for c in series["curves"]] == ["A: old", "B: new"]
    assert [p["iops"] for p in series["curves"][1]["points"]] == [1002, 1522, 1602]
    assert series["curves"][0]["knee"]["axis"] == 4


def test_a_bad_parameter_is_named_on_the_page_and_in_the_json(owner_client, host):
    page = owner_client.get("/sets/compare/?a_disk=x&b_disk=1")
    assert page.status_code == 400
    assert "a_disk</strong>: a_disk takes a disk&#x27;s id" in page.content.decode()
    answer = owner_client.get("/sets/compare/series.json?disk=1")
    assert answer.status_code == 400 and answer.json()["error"]["field"] in ("disk", "split")


def test_the_empty_page_offers_the_form(owner_client):
    page = owner_client.get("/sets/compare/")
    assert page.status_code == 200 and 'name="a_disk"' in page.content.decode()
    assert "Compare sweeps" in owner_client.get("/compare/").content.decode()
