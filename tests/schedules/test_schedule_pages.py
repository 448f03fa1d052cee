from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from jobs import clock
from jobs.api.models import ApiToken
from jobs.models import Membership, Profile, Run, Schedule, Team
from tests.factories import DiskFactory, ProfileFactory, RunFactory


@pytest.fixture
def quick(team) -> Profile:
    return ProfileFactory(team=team, name="quick", rw="randread", runtime_s=10, size_bytes=2**20)


def _form(disk, profile, **overrides) -> dict:
    data = {"name": "nightly", "kind": "cron", "cron": "30 2 * * *", "timezone": "Europe/Berlin",
            "stagger_s": "60", "misfire_grace_s": "300", "enabled": "on", "targets": [disk.pk],
            "profile_0": profile.pk}  # fmt: skip
    return data | overrides


def test_creating_a_schedule_from_the_form_sets_its_next_fire(owner_client, disk, quick):
    response = owner_client.post("/schedules/new/", _form(disk, quick))
    assert response.status_code == 302
    schedule = Schedule.objects.get(name="nightly")
    local = timezone.localtime(schedule.next_fire_at, timezone.get_fixed_timezone(0))
    assert schedule.next_fire_at > timezone.now()
    assert (local.minute, schedule.timezone) == (30, "Europe/Berlin")
    assert list(schedule.targets.all()) == [disk]
    assert [sp.profile for sp in schedule.scheduleprofile_set.all()] == [quick]
    page = owner_client.get("/schedules/").content.decode()
    assert "nightly" in page and "30 2 * * *" in page


@pytest.mark.parametrize(
    ("overrides", "field", "needle"),
    [
        ({"cron": "61 * * * *"}, "cron", "30 2 * * *"),
        ({"timezone": "Mars/Olympus"}, "timezone", "Europe/Berlin"),
        ({"window_start": "2026-05-08T00:00", "window_end": "2026-05-01T00:00"}, "window_end", "2026"),
        ({"cron": "0 * * * *", "stagger_s": "3590", "two_targets": True}, "stagger_s", "largest stagger that fits"),
        ({"blackouts": "8am-6pm"}, "blackouts", "08:00-18:00"),
    ],
)
def test_a_bad_schedule_is_refused_naming_the_field_with_a_valid_example(owner_client, disk, quick, overrides, field,
                                                                          needle):  # fmt: skip
    if overrides.pop("two_targets", False):
        second = DiskFactory(host=disk.host, label="second", target_path="/data/2")
        overrides["targets"] = [disk.pk, second.pk]
    response = owner_client.post("/schedules/new/", _form(disk, quick, **overrides))
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert field in errors, errors
    assert needle in " ".join(errors[field])
    assert not Schedule.objects.exists()


def test_the_preview_lists_the_next_ten_fires_with_each_targets_start(owner_client, disk, quick, host):
    second = DiskFactory(host=host, label="second", target_path="/data/2")
    data = _form(disk, quick, targets=[disk.pk, second.pk], stagger_s="90")
    body = owner_client.post("/schedules/preview.json", data).json()
    assert len(body["fires"]) == 10
    first = body["fires"][0]
    # In the reader's zone (UTC here: no preference, no browser cookie), and in the schedule's own, labelled.
    berlin = ZoneInfo("Europe/Berlin")
    at = datetime.fromisoformat(first["at"])
    assert at.utcoffset() == timedelta(0) and at.astimezone(berlin).strftime("%H:%M:%S") == "02:30:00"
    assert first["at_text"] == at.strftime("%Y-%m-%d %H:%M UTC")
    assert first["at_schedule_text"] == at.astimezone(berlin).strftime("%Y-%m-%d 02:30 %Z")
    assert [run["offset_s"] for run in first["runs"]] == [0, 90]
    assert datetime.fromisoformat(first["runs"][1]["start"]).astimezone(berlin).strftime("%H:%M:%S") == "02:31:30"
    assert first["runs"][1]["start_text"] == (at + timedelta(seconds=90)).strftime("%H:%M:%S UTC")
    # A preview only looks: it used to save the draft, so every keystroke in a new schedule's form made one.
    assert not Schedule.objects.exists()
    assert owner_client.post("/schedules/preview.json", data).status_code == 200


def test_the_preview_names_the_bad_field(owner_client, disk, quick):
    response = owner_client.post("/schedules/preview.json", _form(disk, quick, cron="every night"))
    assert response.status_code == 200
    assert "cron" in response.json()["errors"] and "fires" not in response.json()


def test_pausing_and_resuming_a_schedule(owner_client, disk, quick):
    owner_client.post("/schedules/new/", _form(disk, quick))
    schedule = Schedule.objects.get()
    owner_client.post(f"/schedules/{schedule.pk}/toggle")
    schedule.refresh_from_db()
    assert (schedule.enabled, schedule.next_fire_at) == (False, None)
    owner_client.post(f"/schedules/{schedule.pk}/toggle")
    schedule.refresh_from_db()
    assert schedule.enabled and schedule.next_fire_at


def test_run_now_on_a_schedule_creates_its_staggered_runs(owner_client, disk, quick, host):
    second = DiskFactory(host=host, label="second", target_path="/data/2")
    owner_client.post("/schedules/new/", _form(disk, quick, targets=[disk.pk, second.pk]))
    schedule = Schedule.objects.get()
    owner_client.post(f"/schedules/{schedule.pk}/run-now")
    runs = list(Run.objects.filter(schedule=schedule).order_by("not_before"))
    assert len(runs) == 2
    assert (runs[1].not_before - runs[0].not_before).total_seconds() == 60
    assert runs[0].trigger == Run.Trigger.MANUAL


def test_the_calendar_draws_planned_runs_and_flags_overlaps_on_a_host(owner_client, disk, quick, host):
    second = DiskFactory(host=host, label="second", target_path="/data/2")
    # Three hours from now, so that seven daily fires fall in the calendar's window (now - 12 h, rounded down to
    # the hour, to 7.5 days later) at any time of day: a fixed 02:30 left only six between 01:00 and 01:30.
    hour = (timezone.localtime(timezone.now(), ZoneInfo("Europe/Berlin")) + timedelta(hours=3)).hour
    owner_client.post("/schedules/new/", _form(disk, quick, targets=[disk.pk, second.pk], stagger_s="0",
                                               cron=f"30 {hour} * * *"))  # fmt: skip
    RunFactory(disk=disk, profile=quick, failed=True, started_at=timezone.now() - timedelta(hours=2),
               finished_at=timezone.now() - timedelta(hours=1))  # fmt: skip
    page = owner_client.get("/schedules/calendar/").content.decode()
    assert page.count('class="bar planned overlap"') >= 14  # 7 days x 2 disks starting together on one host
    assert 'class="bar state-failed"' in page
    assert "vm1:second" in page


def test_another_team_cannot_see_or_change_a_schedule(disk, quick, owner_client):
    owner_client.post("/schedules/new/", _form(disk, quick))
    schedule = Schedule.objects.get()
    rival = User.objects.create_user("rival", password="x-long-password-2")
    Membership.objects.create(user=rival, team=Team.objects.create(name="rivals"), role="owner")
    client = Client()
    client.force_login(rival)
    assert client.get(f"/schedules/{schedule.pk}/").status_code == 404
    assert client.post(f"/schedules/{schedule.pk}/toggle").status_code == 404
    assert client.post(f"/schedules/{schedule.pk}/run-now").status_code == 404
    assert "nightly" not in client.get("/schedules/").content.decode()
    assert "vm1" not in client.get("/schedules/calendar/").content.decode()


def test_saving_a_schedule_that_overlaps_another_on_its_host_warns_naming_it_and_the_first_overlap(
    owner_client, disk, quick, host
):
    second = DiskFactory(host=host, label="second", target_path="/data/2")
    owner_client.post("/schedules/new/", _form(disk, quick))
    nightly = Schedule.objects.get(name="nightly")
    response = owner_client.post("/schedules/new/", _form(second, quick, name="also nightly"), follow=True)
    other = Schedule.objects.get(name="also nightly")  # saved all the same: overlaps are legal, worth knowing
    warning = (f"Overlaps schedule nightly on host vm1: first at {clock.show(nightly.next_fire_at, UTC, clock.MINUTES)}"
               " (vm1:second quick and vm1:data quick planned at once)")  # fmt: skip
    assert warning in html.unescape(response.content.decode())
    # The edit page and its live preview say the same, and a schedule is not compared with itself.
    assert warning in html.unescape(owner_client.get(f"/schedules/{other.pk}/").content.decode())
    data = _form(second, quick, name="also nightly")
    preview = owner_client.post(f"/schedules/preview.json?schedule={other.pk}", data).json()
    assert [text[: len(warning)] for text in preview["warnings"]] == [warning]
    # Two hours later there is no overlap, and no warning.
    moved = owner_client.post(f"/schedules/{other.pk}/", _form(second, quick, name="also nightly", cron="30 4 * * *"),
                              follow=True)  # fmt: skip
    assert "Overlaps schedule" not in moved.content.decode()


def test_the_api_returns_a_schedules_overlaps_as_warnings_on_create_update_and_read(owner, team, disk, quick, host):
    second = DiskFactory(host=host, label="second", target_path="/data/2")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(owner, team, 'tests')[1]}")
    body = {"name": "nightly", "cron": "30 2 * * *", "targets": [disk.pk], "profiles": [quick.pk]}
    first = api.post("/api/v1/schedules/", body, content_type="application/json").json()
    assert first["warnings"] == []
    created = api.post("/api/v1/schedules/", body | {"name": "also", "targets": [second.pk]},
                       content_type="application/json")  # fmt: skip
    assert created.status_code == 201, created.content
    (warning,) = created.json()["warnings"]
    assert (warning["schedule"], warning["schedule_name"], warning["host"]) == (first["id"], "nightly", "vm1")
    assert warning["first_at"] == first["next_fire_at"]
    assert warning["runs"] == ["vm1:second quick", "vm1:data quick"]
    assert warning["message"].startswith("Overlaps schedule nightly on host vm1: first at ")
    assert api.get(f"/api/v1/schedules/{first['id']}/").json()["warnings"][0]["schedule_name"] == "also"
    listed = api.get("/api/v1/schedules/").json()
    items = listed["results"] if isinstance(listed, dict) else listed
    assert {item["name"]: [w["schedule_name"] for w in item["warnings"]] for item in items} == {
        "also": ["nightly"], "nightly": ["also"]
    }  # fmt: skip
    moved = api.patch(f"/api/v1/schedules/{created.json()['id']}/", {"cron": "30 4 * * *"},
                      content_type="application/json")  # fmt: skip
    assert moved.json()["warnings"] == []


def test_a_two_minute_schedule_says_where_its_bars_stop_and_its_day_view_draws_the_whole_day(owner_client, disk, quick):
    owner_client.post("/schedules/new/", _form(disk, quick, kind="interval", cron="", interval_minutes="2"))
    page = owner_client.get("/schedules/calendar/").content.decode()
    # 7 days of fires every 2 minutes are 5,040 runs: the lane draws 400 of them and says so.
    assert len(re.findall(r'class="bar planned[^"]*" style', page)) == 400
    note = re.search(r"Showing the first 400 runs of ([\d,]+) on vm1:data, up to .*?; "
                     r'<a href="\?day=(\d{4}-\d\d-\d\d)">open the day view', page)  # fmt: skip
    assert note, page[page.find("lane-cap") - 200 :][:800]
    assert int(note[1].replace(",", "")) >= 5000
    tomorrow = (timezone.now() + timedelta(days=1)).date()
    day = owner_client.get(f"/schedules/calendar/?day={tomorrow:%Y-%m-%d}").content.decode()
    assert len(re.findall(r'class="bar planned[^"]*" style', day)) == 720 and "Showing the first" not in day
    assert "previous day" in day
    refused = owner_client.get("/schedules/calendar/?day=tomorrow").content.decode()
    assert "give one as YYYY-MM-DD" in refused
    assert "give a date from 2000 to 2199" in owner_client.get("/schedules/calendar/?day=0001-01-01").content.decode()


@pytest.mark.django_db
def test_a_schedule_whose_profile_cannot_run_on_a_target_is_refused_on_the_form_and_in_the_api(
    owner, owner_client, team, disk, quick
):
    # A profile without a file size runs on a whole block device only; the disk is a directory.
    raw = ProfileFactory(team=team, name="raw only", rw="randread", runtime_s=10, size_bytes=None)
    response = owner_client.post("/schedules/new/", _form(disk, quick, profile_1=raw.pk))
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert f"raw only cannot run on disk {disk.label}: it has no file size" in page
    assert "Remove the disk or the profile from this schedule." in page
    assert not Schedule.objects.exists()
    api = Client(HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(owner, team, 'tests')[1]}")
    body = {"name": "nightly", "cron": "30 2 * * *", "targets": [disk.pk], "profiles": [quick.pk, raw.pk]}
    refused = api.post("/api/v1/schedules/", body, content_type="application/json")
    assert refused.status_code == 400, refused.content
    (message,) = refused.json()["targets"]
    assert message.startswith(f"raw only cannot run on disk {disk.label}: it has no file size")
    assert not Schedule.objects.exists()
