"""The forms a sweep is made with: its axes and what it does on a failure on the profile form (the plan shown as
it is typed, the model's refusals on the axes field), and the team's bound on a sweep's time on the team's
settings page."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs.models import Membership, Profile

pytestmark = pytest.mark.django_db


def profile_data(**changes: str) -> dict[str, str]:
    data = {
        "name": "qd sweep", "description": "", "tool": "fio", "rw": "randread", "pattern": "random",
        "read_percent": "50", "block_size_bytes": "4k", "iodepth": "1", "jobs": "1", "runtime_s": "60",
        "ramp_time_s": "5", "time_based": "on", "direct": "on", "size_bytes": "1G", "ioengine": "libaio",
        "precondition_passes": "2", "sweep_on_failure": "continue",
    }  # fmt: skip
    return data | changes


def test_a_sweep_profile_is_saved_from_its_axis_rows_and_shows_its_plan(owner_client, team):
    data = profile_data(sweep_field_1="jobs", sweep_values_1="1,2", sweep_field_2="iodepth",
                        sweep_values_2="1-64 x4", sweep_on_failure="stop")  # fmt: skip

    preview = owner_client.get("/profiles/preview.json", data).json()
    assert preview["plan"] == "numjobs 1,2 × iodepth 1-64 x4: 8 points × (5 s ramp + 1 min) = 8 min 40 s"

    answer = owner_client.post("/profiles/new/", data)
    profile = Profile.objects.get(team=team, name="qd sweep")
    assert answer["Location"] == f"/profiles/{profile.pk}/"
    assert list(profile.sweep_axes.items()) == [("jobs", "1,2"), ("iodepth", "1-64 x4")]
    assert profile.sweep_on_failure == "stop"
    detail = owner_client.get(answer["Location"]).content.decode()
    assert "numjobs 1,2 × iodepth 1-64 x4: 8 points × (5 s ramp + 1 min) = 8 min 40 s; when a point fails: stop" in (
        detail
    )
    edit = owner_client.get(f"/profiles/{profile.pk}/edit/").context["form"]
    assert [edit[f"sweep_{part}_{row}"].value() for row in (1, 2) for part in ("field", "values")] == [
        "jobs", "1,2", "iodepth", "1-64 x4"]  # fmt: skip


def test_a_profile_without_axes_stays_one_run_and_older_forms_keep_the_default(owner_client, team):
    data = profile_data()
    del data["sweep_on_failure"]
    assert owner_client.get("/profiles/preview.json", data).json()["plan"] == ""
    owner_client.post("/profiles/new/", data)
    profile = Profile.objects.get(team=team)
    assert profile.sweep_axes == {} and profile.sweep_on_failure == "continue" and not profile.is_sweep


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ({"sweep_field_1": "iodepth", "sweep_values_1": "1-100 x2"},
         "iodepth: '1-100 x2' does not land on 100; end it at 64 or 128"),
        ({"sweep_field_1": "block_size_bytes", "sweep_values_1": "4k,1M", "size_bytes": "64k"},
         "block size: 1M is larger than the base profile's file per job (64k)"),
        ({"sweep_field_1": "iodepth", "sweep_values_1": ""}, "Axis 1: give the values of iodepth"),
        ({"sweep_values_2": "4k,64k"}, "Axis 2: choose the field its values '4k,64k' are for."),
        ({"sweep_field_1": "jobs", "sweep_values_1": "1,2", "sweep_field_2": "jobs", "sweep_values_2": "4,8"},
         "Axis 2: jobs is axis 1 already"),
    ],
)  # fmt: skip
def test_a_sweep_the_model_or_the_rows_refuse_is_named_on_the_axes_field(owner_client, team, rows, message):
    answer = owner_client.post("/profiles/new/", profile_data(**rows))

    assert answer.status_code == 200
    errors = answer.context["form"].errors
    assert list(errors) == ["sweep_axes"] and message in errors["sweep_axes"][0]
    assert message.replace("'", "&#x27;") in answer.content.decode()
    assert not Profile.objects.filter(team=team).exists()
    preview = owner_client.get("/profiles/preview.json", profile_data(**rows)).json()
    assert message in preview["errors"]["sweep_axes"]


def test_owners_set_the_teams_sweep_bound_in_minutes_and_others_read_it(owner_client, team):
    page = owner_client.get("/team/settings/").content.decode()
    assert "may take up to <strong>4 h</strong>" in page and 'value="240"' in page

    answer = owner_client.post("/team/settings/", {"sweep_bound_minutes": "90"})
    assert answer.status_code == 302
    team.refresh_from_db()
    assert team.sweep_bound_s == 90 * 60
    assert "may take up to <strong>1 h 30 min</strong>" in owner_client.get("/team/settings/").content.decode()

    bad = owner_client.post("/team/settings/", {"sweep_bound_minutes": "0"})
    assert "Longest sweep: at least 1 minute." in bad.content.decode()
    team.refresh_from_db()
    assert team.sweep_bound_s == 90 * 60

    member = User.objects.create_user("mia", password="a-long-member-password-4")
    Membership.objects.create(user=member, team=team, role=Membership.Role.MEMBER)
    client = Client()
    client.force_login(member)
    assert "1 h 30 min" in client.get("/team/settings/").content.decode()
    assert client.post("/team/settings/", {"sweep_bound_minutes": "600"}).status_code == 403
    team.refresh_from_db()
    assert team.sweep_bound_s == 90 * 60


def test_the_profile_list_says_which_profiles_are_sweeps_and_what_they_take(owner_client, team):
    Profile.objects.create(team=team, name="qd", runtime_s=30, size_bytes=2**20, sweep_axes={"iodepth": "1-256 x2"})
    page = owner_client.get("/profiles/").content.decode()
    assert "; a sweep of iodepth 1-256 x2: 9 points × 30 s = 4 min 30 s" in page
