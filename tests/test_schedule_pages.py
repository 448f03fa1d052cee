from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

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
    assert "T02:30:00" in first["at"]
    assert [run["offset_s"] for run in first["runs"]] == [0, 90]
    assert first["runs"][1]["start"][11:19] == "02:31:30"
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
