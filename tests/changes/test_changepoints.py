"""Change points and annotations (issue 17): the detection on constructed histories with a known truth, the
stored change points kept as runs are recorded, marking one expected, the API and its roles."""

from __future__ import annotations

import random
from datetime import timedelta

import numpy as np
import pytest
import ruptures
from django.contrib.auth.models import User
from django.test import Client

from jobs import units
from jobs.analysis.changepoints import Point, detect
from jobs.analysis.l2_cost import CumulativeL2
from jobs.api.models import ApiToken
from jobs.models import Annotation, ChangePoint, Disk, Membership, Profile, Run
from tests.factories import NIGHT_ONE, ProfileFactory, RunFactory, fio_summary, nightly_runs, noisy
from tests.world import client_for, make_world


def series(values: list[float]) -> list[Point]:
    return [Point(run_id=i + 1, finished_ms=i * 86_400_000, value=v) for i, v in enumerate(values)]


# --- the detection alone -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_a_30_percent_step_after_18_of_30_nights_is_one_change_point_at_the_19th_run(seed):
    rng = random.Random(seed)
    found = detect(series(noisy(4000, 18, rng) + noisy(2800, 12, rng)))
    assert len(found) == 1
    change = found[0]
    assert change.first.run_id == 19 and (change.runs_before, change.runs_after) == (18, 12)
    assert -33 < change.change_percent < -27
    assert change.p_value < 0.01 and change.direction("iops") == "worse"


@pytest.mark.parametrize("seed", range(10))
def test_a_stable_series_within_3_percent_has_no_change_point(seed):
    assert detect(series(noisy(4000, 30, random.Random(seed)))) == []


@pytest.mark.parametrize("seed", range(10))
def test_one_bad_night_among_30_is_not_a_change_point(seed):
    rng = random.Random(seed)
    values = noisy(4000, 30, rng)
    values[rng.randrange(30)] = 1000.0
    assert detect(series(values)) == []


def test_a_latency_rise_is_worse_and_a_latency_fall_better():
    rng = random.Random(7)
    rise = detect(series(noisy(900, 15, rng) + noisy(1400, 15, rng)))
    fall = detect(series(noisy(1400, 15, rng) + noisy(900, 15, rng)))
    assert [c.direction("p99_latency") for c in rise] == ["worse"]
    assert [c.direction("p99_latency") for c in fall] == ["better"]
    assert rise[0].change_percent > 40 and fall[0].change_percent < -30


def test_two_steps_are_two_change_points_and_a_short_series_none():
    rng = random.Random(3)
    found = detect(series(noisy(4000, 12, rng) + noisy(3000, 12, rng) + noisy(4500, 12, rng)))
    assert [c.first.run_id for c in found] == [13, 25]
    assert detect(series([4000.0, 4000.0, 2000.0, 2000.0, 2000.0])) == []


def test_a_shift_smaller_than_5_percent_is_not_reported_however_significant():
    values = [4000.0] * 15 + [3900.0] * 15  # -2.5 %, perfectly separated
    assert detect(series(values)) == []


@pytest.mark.parametrize("penalty", [0.005, 0.05, 0.5])
def test_the_running_sum_cost_segments_as_ruptures_own_l2_does(penalty):
    rng = random.Random(21)
    values = np.array(noisy(1.0, 150, rng, spread=0.1) + noisy(0.7, 100, rng, spread=0.1)).reshape(-1, 1)
    ours = ruptures.Binseg(custom_cost=CumulativeL2(min_size=3), min_size=3, jump=1).fit(values).predict(pen=penalty)
    theirs = ruptures.Binseg(model="l2", min_size=3, jump=1).fit(values).predict(pen=penalty)
    assert ours == theirs


# --- stored change points on recorded runs ---------------------------------------------------------------------------


def nightly(disk: Disk, profile: Profile, iops: list[float], p99: list[float] | None = None) -> list[Run]:
    """One succeeded, recorded run a night at 02:30 UTC, as RunResult.record keeps them after a real run."""
    return nightly_runs(disk, iops, profile=profile, p99=p99)


@pytest.fixture
def world(db):
    """make_world's team, with a profile of its own for the nights (the world's run is under another)."""
    w, secret = make_world("ours")
    w.profile = ProfileFactory(team=w.team, name="nightly", rw="randread")
    return w, secret


def test_recorded_nights_with_a_step_keep_one_change_point_per_metric_at_the_19th_run(world):
    w, _ = world
    rng = random.Random(11)
    runs = nightly(w.disk, w.profile, noisy(4000, 18, rng) + noisy(2800, 12, rng))
    found = ChangePoint.objects.filter(disk=w.disk, profile_name=w.profile.name)
    assert sorted(found.values_list("metric", flat=True)) == ["bandwidth", "iops"]  # p99 stayed at 900 µs
    iops = found.get(metric="iops")
    assert iops.run_id == runs[18].pk and iops.at == runs[18].finished_at
    assert -33 < iops.change_percent < -27 and iops.direction == "worse" and iops.p_value < 0.01
    assert iops.runs_before == 18 and not iops.expected


def test_a_change_point_keeps_its_id_as_later_runs_are_recorded(world):
    w, _ = world
    rng = random.Random(12)
    nightly(w.disk, w.profile, noisy(4000, 18, rng) + noisy(2800, 8, rng))
    first = ChangePoint.objects.get(disk=w.disk, metric="iops")
    RunFactory(disk=w.disk, profile=w.profile, succeeded=True, summary=fio_summary(read_iops=2790.0),
               finished_at=NIGHT_ONE + timedelta(days=40), recorded=True)  # fmt: skip
    again = ChangePoint.objects.get(disk=w.disk, metric="iops")
    assert again.pk == first.pk and again.runs_after == first.runs_after + 1


def test_a_stable_history_and_one_bad_night_store_nothing(world):
    w, _ = world
    rng = random.Random(13)
    values = noisy(4000, 30, rng)
    values[20] = 900.0
    nightly(w.disk, w.profile, values)
    assert not ChangePoint.objects.filter(disk=w.disk).exists()


def _stamped(disk: Disk, profile: Profile, nights: list[tuple[float, str | None]]) -> list[Run]:
    """Nights as nightly() records them, each run judged as it was stored: no verdict, or one of this kind."""
    runs = []
    for night, (iops, kind) in enumerate(nights):
        finished = NIGHT_ONE + timedelta(days=night)
        verdicts = [{"kind": kind, "text": f"{kind} (test)", "evidence": {}}] if kind else []
        runs.append(RunFactory(
            disk=disk, profile=profile, profile_name=profile.name, parameters=profile.parameters(), succeeded=True,
            summary=fio_summary(read_iops=iops), started_at=finished - timedelta(seconds=60), finished_at=finished,
            recorded=True, verdicts=verdicts,
        ))  # fmt: skip
    return runs


@pytest.mark.parametrize("kind", ["client_bound", "cache_suspected", "host_under_pressure"])
def test_runs_whose_number_was_not_the_disks_are_left_out_of_change_point_detection(world, kind):
    """Twelve nights served from a cache (or held by the client, or a host under pressure) at twice the level are no
    change of the disk's; the disk's own runs around them stay one level."""
    w, _ = world
    rng = random.Random(21)
    nights = [(v, None) for v in noisy(4000, 18, rng)] + [(v, kind) for v in noisy(8000, 12, rng)]
    nights += [(v, None) for v in noisy(4000, 4, rng)]
    _stamped(w.disk, w.profile, nights)
    assert not ChangePoint.objects.filter(disk=w.disk).exists()


def test_a_series_whose_every_run_was_buffered_keeps_its_runs_and_its_change_points(world):
    """A workload run buffered on purpose is cache suspected every night: with no run that measured the disk to
    compare with, its runs are its levels, and a step among them is still found."""
    w, _ = world
    rng = random.Random(22)
    nights = [(v, "cache_suspected") for v in noisy(4000, 18, rng) + noisy(2800, 12, rng)]
    runs = _stamped(w.disk, w.profile, nights)
    change = ChangePoint.objects.get(disk=w.disk, metric="iops")
    assert change.run_id == runs[18].pk and change.direction == "worse"


def test_a_verdict_of_the_disks_own_behaviour_still_counts_toward_a_change_point(world):
    """A cloud's cap or a saturated device is the disk's own level: the same step under those verdicts is found."""
    w, _ = world
    rng = random.Random(21)
    nights = [(v, None) for v in noisy(4000, 18, rng)]
    nights += [(v, "throttled_at_promise" if i % 2 else "device_saturated") for i, v in enumerate(noisy(8000, 12, rng))]
    runs = _stamped(w.disk, w.profile, nights)
    change = ChangePoint.objects.get(disk=w.disk, metric="iops")
    assert change.run_id == runs[18].pk and change.direction == "better" and change.runs_after == 12


def test_a_latency_rise_is_stored_as_worse(world):
    w, _ = world
    rng = random.Random(14)
    nightly(w.disk, w.profile, noisy(4000, 30, rng), p99=noisy(900, 16, rng) + noisy(1500, 14, rng))
    change = ChangePoint.objects.get(disk=w.disk)
    assert change.metric == "p99_latency" and change.direction == "worse" and change.change_percent > 50


def test_marking_expected_makes_an_annotation_and_a_new_baseline(world):
    w, secret = world
    rng = random.Random(15)
    # Two steps: -25 % after night 10, -30 % after night 22.
    runs = nightly(w.disk, w.profile, noisy(4000, 10, rng) + noisy(3000, 12, rng) + noisy(2100, 10, rng))
    iops = ChangePoint.objects.filter(disk=w.disk, metric="iops").order_by("at")
    assert [c.run_id for c in iops] == [runs[10].pk, runs[22].pk]
    api = client_for(secret)
    answer = api.post(f"/api/v1/change-points/{iops[1].pk}/expected/", {"text": "moved to PL2"}, "application/json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["expected"] is True
    annotation = Annotation.objects.get(pk=answer.json()["annotation"])
    assert (annotation.text, annotation.kind, annotation.disk, annotation.at) == (
        "moved to PL2", "expected", w.disk, runs[22].finished_at,
    )  # fmt: skip
    assert annotation.created_by == w.owner
    # The earlier IOPS change is gone, the expected one stays, and later runs are judged from it on.
    assert list(ChangePoint.objects.filter(disk=w.disk, metric="iops").values_list("run_id", "expected")) == [
        (runs[22].pk, True)
    ]
    nightly_after = NIGHT_ONE + timedelta(days=40)
    RunFactory(disk=w.disk, profile=w.profile, succeeded=True, summary=fio_summary(read_iops=2100.0),
               finished_at=nightly_after, recorded=True)  # fmt: skip
    assert not ChangePoint.objects.filter(disk=w.disk, metric="iops", at__lt=runs[22].finished_at).exists()
    # The bandwidth series has its own baseline: its earlier change is still there.
    assert ChangePoint.objects.filter(disk=w.disk, metric="bandwidth", run=runs[10]).exists()


def test_a_change_point_older_than_the_window_stays_as_it_was_found(world, monkeypatch):
    from jobs.models import changes

    monkeypatch.setattr(changes, "WINDOW", 20)  # detection reads the last 20 runs of a series, not 1,000
    w, _ = world
    rng = random.Random(23)
    runs = nightly(w.disk, w.profile, noisy(4000, 18, rng) + noisy(2800, 32, rng))
    # By the 50th night the step at the 19th is 31 runs back, out of the window: kept, not forgotten.
    (change,) = ChangePoint.objects.filter(disk=w.disk, metric="iops")
    assert change.run_id == runs[18].pk and -33 < change.change_percent < -27


def test_runs_an_admin_fails_or_deletes_leave_the_change_points_in_step(world, rf):
    from django.contrib import admin

    from jobs.admin import RunAdmin

    w, _ = world
    rng = random.Random(22)
    runs = nightly(w.disk, w.profile, noisy(4000, 18, rng) + noisy(2800, 12, rng))
    run_admin, request = RunAdmin(Run, admin.site), rf.post("/admin/")
    request.user = w.owner
    for run in runs[18:26]:  # the slower nights were a broken setup: marked failed, they leave the series
        run.state = Run.State.FAILED
        run_admin.save_model(request, run, form=None, change=True)
    # Four slow runs are left: still a change, now at the 27th run.
    assert list(ChangePoint.objects.filter(metric="iops").values_list("run_id", flat=True)) == [runs[26].pk]
    # The faster nights deleted: nothing is left to compare the slow ones with (the change point's own run stays).
    run_admin.delete_queryset(request, Run.objects.filter(pk__in=[r.pk for r in runs[:18]]))
    assert Run.objects.filter(pk=runs[26].pk).exists() and not ChangePoint.objects.exists()


# --- the API ---------------------------------------------------------------------------------------------------------


def test_the_api_lists_a_disks_change_points_newest_first_with_their_levels(world):
    w, secret = world
    rng = random.Random(16)
    runs = nightly(w.disk, w.profile, noisy(4000, 18, rng) + noisy(2800, 12, rng))
    answer = client_for(secret).get(f"/api/v1/change-points/?disk={w.disk.pk}&metric=iops")
    assert answer.status_code == 200
    (item,) = answer.json()["results"]
    assert item["run"] == runs[18].pk and item["metric"] == "iops" and item["profile_name"] == w.profile.name
    assert item["at"].startswith("2026-03-19T02:30") and -33 < item["change_percent"] < -27
    assert item["before"] > item["after"] and item["direction"] == "worse" and item["expected"] is False
    assert client_for(secret).get("/api/v1/change-points/?disk=x").status_code == 400
    assert client_for(secret).get("/api/v1/change-points/?metric=speed").json() == {
        "metric": ["Give one of iops, bandwidth, p99_latency."]
    }


def test_another_team_sees_none_and_a_viewer_cannot_mark_or_annotate(world):
    w, _ = world
    rng = random.Random(17)
    nightly(w.disk, w.profile, noisy(4000, 18, rng) + noisy(2800, 12, rng))
    change = ChangePoint.objects.filter(disk=w.disk).first()
    _, their_secret = make_world("theirs", password="their-canary-password")
    theirs = client_for(their_secret)
    assert theirs.get("/api/v1/change-points/").json()["results"] == []
    assert theirs.post(f"/api/v1/change-points/{change.pk}/expected/").status_code == 404
    viewer = User.objects.create_user("looker")
    Membership.objects.create(user=viewer, team=w.team, role=Membership.Role.VIEWER)
    looker = client_for(ApiToken.issue(viewer, w.team, "look")[1])
    assert looker.get("/api/v1/change-points/").json()["count"] == 2
    refused = looker.post(f"/api/v1/change-points/{change.pk}/expected/")
    assert refused.status_code == 403 and "Viewers" in refused.json()["detail"]
    note = {"at": "2026-03-10T12:00:00Z", "text": "kernel upgrade"}
    assert looker.post("/api/v1/annotations/", note, "application/json").status_code == 403
    assert not ChangePoint.objects.filter(expected=True).exists() and not Annotation.objects.exists()


def test_annotations_are_created_listed_for_a_disk_changed_and_deleted(world):
    w, secret = world
    api = client_for(secret)
    made = api.post("/api/v1/annotations/", {"at": "2026-03-10T12:00:00Z", "text": "kernel upgrade", "host": w.host.pk},
                    "application/json")  # fmt: skip
    assert made.status_code == 201, made.content
    assert made.json()["created_by"] == w.owner.username and made.json()["disk"] is None
    team_wide = api.post("/api/v1/annotations/", {"at": "2026-03-11T00:00:00Z", "text": "DC move"}, "application/json")
    assert team_wide.status_code == 201
    listed = api.get(f"/api/v1/annotations/?disk={w.disk.pk}").json()["results"]
    assert [a["text"] for a in listed] == ["DC move", "kernel upgrade"]  # newest first: its host's and the team's
    changed = api.patch(f"/api/v1/annotations/{made.json()['id']}/", {"text": "kernel 6.8"}, "application/json")
    assert changed.status_code == 200 and changed.json()["text"] == "kernel 6.8"
    assert api.delete(f"/api/v1/annotations/{team_wide.json()['id']}/").status_code == 204
    assert list(Annotation.objects.values_list("text", flat=True)) == ["kernel 6.8"]


def test_an_annotation_names_the_field_to_fix(world):
    _, secret = world
    api = client_for(secret)
    other = make_world("theirs", password="their-canary-password")[0]
    blank = api.post("/api/v1/annotations/", {"at": "2026-03-10T12:00:00Z", "text": "  "}, "application/json")
    assert blank.status_code == 400 and "text" in blank.json()
    foreign = api.post("/api/v1/annotations/", {"at": "2026-03-10T12:00:00Z", "text": "x", "disk": other.disk.pk},
                       "application/json")  # fmt: skip
    assert foreign.status_code == 400 and "disk" in foreign.json()
    no_time = api.post("/api/v1/annotations/", {"text": "kernel upgrade"}, "application/json")
    assert no_time.status_code == 400 and "at" in no_time.json()


# --- the charts ------------------------------------------------------------------------------------------------------


def test_the_disk_chart_data_marks_its_change_points_and_the_annotations_that_concern_it(world):
    w, _ = world
    rng = random.Random(18)
    runs = nightly(w.disk, w.profile, noisy(4000, 18, rng) + noisy(2800, 12, rng))
    other_host = make_world("elsewhere")[0].host
    Annotation.objects.create(team=w.team, host=w.host, at=NIGHT_ONE + timedelta(days=5), text="kernel upgrade")
    Annotation.objects.create(team=w.team, at=NIGHT_ONE + timedelta(days=6), text="DC move")
    Annotation.objects.create(team=other_host.team, host=other_host, at=NIGHT_ONE, text="not ours")
    browser = Client()
    browser.force_login(w.owner)
    marks = browser.get(f"/disks/{w.disk.pk}/series.json?range=all").json()["marks"]
    assert {(c["metric"], c["run"]) for c in marks["changes"]} == {("iops", runs[18].pk), ("bandwidth", runs[18].pk)}
    assert {c["x"] for c in marks["changes"]} == {round(runs[18].finished_at.timestamp() * 1000)}
    assert [a["text"] for a in marks["annotations"]] == ["DC move", "kernel upgrade"]
    before = browser.get(f"/disks/{w.disk.pk}/series.json?range=custom&from=2026-03-01&to=2026-03-10").json()
    assert before["marks"]["changes"] == [] and len(before["marks"]["annotations"]) == 2


# --- the pages -------------------------------------------------------------------------------------------------------


def signed_in(user: User) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def test_the_changes_page_lists_change_points_newest_first_and_marks_one_expected(world):
    w, _ = world
    rng = random.Random(19)
    runs = nightly(w.disk, w.profile, noisy(4000, 10, rng) + noisy(3000, 12, rng) + noisy(2100, 10, rng))
    browser = signed_in(w.owner)
    page = browser.get("/changes/").content.decode()
    assert page.index(f"run #{runs[22].pk}") < page.index(f"run #{runs[10].pk}")
    newest = ChangePoint.objects.filter(metric="iops").order_by("-at").first()
    assert f"{newest.change_percent:.1f} %" in page and units.format_iops_exact(newest.before) in page
    assert f"/disks/{w.disk.pk}/?range=custom" in page and "Mark expected" in page and "p &lt; 0.001" in page
    answer = browser.post(f"/changes/{newest.pk}/expected", {"next": f"/disks/{w.disk.pk}/"})
    assert answer.status_code == 302 and answer["Location"] == f"/disks/{w.disk.pk}/"
    assert Annotation.objects.get().kind == "expected" and ChangePoint.objects.get(pk=newest.pk).expected
    assert browser.post(f"/changes/{newest.pk}/expected", {"next": "https://evil.example/"})["Location"] == "/changes/"


def test_a_note_added_on_the_disk_page_shows_there_and_on_the_changes_page(world):
    w, _ = world
    browser = signed_in(w.owner)
    disk_page = browser.get(f"/disks/{w.disk.pk}/").content.decode()
    assert 'id="disk-changes"' in disk_page and 'id="annotation-form"' in disk_page
    added = browser.post(
        "/changes/",
        {"at": "2026-03-10T12:00", "text": "kernel upgrade", "disk": w.disk.pk, "next": f"/disks/{w.disk.pk}/"},
    )
    assert added.status_code == 302 and added["Location"] == f"/disks/{w.disk.pk}/"
    note = Annotation.objects.get()
    assert (note.disk, note.created_by, note.team) == (w.disk, w.owner, w.team)
    assert "kernel upgrade" in browser.get(f"/disks/{w.disk.pk}/").content.decode()
    assert "kernel upgrade" in browser.get("/changes/").content.decode()
    refused = browser.post("/changes/", {"at": "", "text": "", "disk": w.disk.pk})
    assert refused.status_code == 200 and "This field is required" in refused.content.decode()
    assert browser.post(f"/annotations/{note.pk}/delete").status_code == 302
    assert not Annotation.objects.exists()


def test_a_viewer_sees_the_changes_page_without_forms_and_cannot_post(world):
    w, _ = world
    rng = random.Random(20)
    nightly(w.disk, w.profile, noisy(4000, 18, rng) + noisy(2800, 12, rng))
    viewer = User.objects.create_user("looker")
    Membership.objects.create(user=viewer, team=w.team, role=Membership.Role.VIEWER)
    browser = signed_in(viewer)
    page = browser.get("/changes/").content.decode()
    assert "Mark expected" not in page and 'id="annotation-form"' not in page and 'id="change-points"' in page
    change = ChangePoint.objects.first()
    assert browser.post(f"/changes/{change.pk}/expected").status_code == 403
    assert browser.post("/changes/", {"at": "2026-03-10T12:00", "text": "x"}).status_code == 403
    stranger = make_world("theirs", password="their-canary-password")[0].owner
    assert signed_in(stranger).post(f"/changes/{change.pk}/expected").status_code == 404
    assert not ChangePoint.objects.filter(expected=True).exists() and not Annotation.objects.exists()


def test_a_note_added_on_the_host_page_concerns_every_disk_of_the_host(world):
    w, _ = world
    browser = signed_in(w.owner)
    host_page = browser.get(f"/hosts/{w.host.pk}/").content.decode()
    assert 'id="host-notes"' in host_page and f'<option value="{w.host.pk}" selected>' in host_page
    added = browser.post(
        "/changes/",
        {"at": "2026-03-10T12:00", "text": "firmware 2.1", "host": w.host.pk, "next": f"/hosts/{w.host.pk}/"},
    )
    assert added["Location"] == f"/hosts/{w.host.pk}/"
    assert "firmware 2.1" in browser.get(f"/hosts/{w.host.pk}/").content.decode()
    marks = browser.get(f"/disks/{w.disk.pk}/series.json?range=all").json()["marks"]
    assert [a["text"] for a in marks["annotations"]] == ["firmware 2.1"]
