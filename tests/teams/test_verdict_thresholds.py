"""A team's own verdict thresholds on its settings page: one field per threshold with its unit and default,
saved over the defaults, bad input refused naming the field and the fix with nothing lost; and the page in a
real Chromium at desktop and phone widths; and the same settings in the API (GET/PATCH /api/v1/teams/settings/),
owners writing, others reading."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs.analysis import verdicts
from jobs.api.models import ApiToken
from jobs.models import Membership, Team
from jobs.teams import membership as teams
from tests.browser import STICKING_OUT, UNLABELLED_CONTROLS, log_in

PASSWORD = "a-long-thresholds-password-6"


def settings_data(**thresholds: str) -> dict[str, str]:
    return {"sweep_bound_minutes": "240"} | {f"verdict_{key}": value for key, value in thresholds.items()}


@pytest.mark.django_db
def test_the_settings_page_shows_every_threshold_with_its_unit_and_default(owner_client):
    form = owner_client.get("/team/settings/").context["form"]
    page = owner_client.get("/team/settings/").content.decode()

    for threshold in verdicts.THRESHOLDS:
        field = form[f"verdict_{threshold.key}"]
        assert field.label == f"{threshold.label} ({threshold.unit})"
        assert f"Default {threshold.default:g} {threshold.unit}; empty keeps the default." in field.help_text
        assert f'placeholder="{threshold.default:g}"' in str(field)
    assert [title for title, _ in form.verdict_groups()] == [
        "Every rule", "Client-bound", "Cache suspected", "Device saturated", "Throttled at the promise",
        "Stripe imbalance", "Host under pressure",
    ]  # fmt: skip
    assert "every verdict threshold at its default" in page


@pytest.mark.django_db
def test_an_owner_sets_thresholds_and_an_emptied_field_goes_back_to_the_default(owner_client, team):
    answer = owner_client.post("/team/settings/", settings_data(client_cpu_busy_percent="90", stripe_ratio="2.5"))

    assert answer.status_code == 302
    team.refresh_from_db()
    assert team.verdict_thresholds == {"client_cpu_busy_percent": 90.0, "stripe_ratio": 2.5}
    limits = team.verdict_limits()
    assert limits["client_cpu_busy_percent"] == 90.0 and limits["steal_percent"] == 5.0
    page = owner_client.get("/team/settings/")
    assert "it has 2 verdict thresholds of its own (the others at their defaults)." in page.content.decode()
    assert page.context["form"]["verdict_stripe_ratio"].value() == 2.5

    owner_client.post("/team/settings/", settings_data(client_cpu_busy_percent="90"))
    team.refresh_from_db()
    assert team.verdict_thresholds == {"client_cpu_busy_percent": 90.0}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ({"client_cpu_busy_percent": "120"},
         "client_cpu_busy_percent: 120 is above 100; give a number from 50 to 100 %, e.g. 95 (the default)."),
        ({"saturated_queue_growth": "0.5"},
         "saturated_queue_growth: 0.5 is below 1; give a number from 1 to 1000 × the first third, e.g. 1.5 "
         "(the default)."),
        ({"steal_percent": "lots"}, "steal_percent: give a number, e.g. 5 (the default)."),
    ],
)  # fmt: skip
def test_a_bad_threshold_is_refused_naming_the_field_and_the_fix_and_nothing_is_lost(
    owner_client, team, typed, message
):
    team.verdict_thresholds = {"stripe_ratio": 2.0}
    team.save()
    typed_with_others = {**typed, "stripe_ratio": "3", "min_seconds": "20"}

    answer = owner_client.post("/team/settings/", settings_data(**typed_with_others))

    assert answer.status_code == 200
    [(key, value)] = typed.items()
    assert answer.context["form"].errors == {f"verdict_{key}": [message]}
    assert message.replace("'", "&#x27;") in answer.content.decode()
    assert "Nothing was saved: 1 field below needs a change" in answer.content.decode()
    assert f'value="{value}"' in answer.content.decode() and 'value="20"' in answer.content.decode()  # kept as typed
    team.refresh_from_db()
    assert team.verdict_thresholds == {"stripe_ratio": 2.0}


@pytest.mark.django_db
def test_members_read_the_thresholds_but_only_owners_change_them(team):
    team.verdict_thresholds = {"steal_percent": 12.0}
    team.save()
    member = User.objects.create_user("mia", password=PASSWORD)
    Membership.objects.create(user=member, team=team, role=Membership.Role.MEMBER)
    client = Client()
    client.force_login(member)

    form = client.get("/team/settings/").context["form"]
    assert form["verdict_steal_percent"].value() == 12.0 and form.fields["verdict_steal_percent"].disabled
    assert client.post("/team/settings/", settings_data(steal_percent="1")).status_code == 403
    team.refresh_from_db()
    assert team.verdict_thresholds == {"steal_percent": 12.0}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_thresholds_fit_desktop_and_phone_and_a_refusal_shows_beside_its_field(
    page, phone_page, live_server, screenshot
):
    teams.place_new_user(User.objects.create_user("tuner", password=PASSWORD))
    for tab, name in ((page, "desktop"), (phone_page, "phone")):
        log_in(tab, live_server.url, "tuner", PASSWORD)
        tab.goto(f"{live_server.url}/team/settings/")
        assert tab.evaluate(STICKING_OUT) == [], name
        assert tab.evaluate(UNLABELLED_CONTROLS) == [], name
        screenshot(name, on=tab)

    page.get_by_label("Steal at (%)").fill("500")
    page.get_by_label("CPU saturated at (%)").fill("92")
    page.get_by_role("button", name="Save").click()
    page.wait_for_load_state("load")
    row = page.locator("#row-verdict_steal_percent")
    assert "steal_percent: 500 is above 100; give a number from 1 to 100 %, e.g. 5 (the default)." in row.inner_text()
    assert page.get_by_label("CPU saturated at (%)").input_value() == "92"
    assert page.locator("#settings-refused").inner_text() == (
        "Nothing was saved: 1 field below needs a change; the reason is beside each."
    )
    screenshot("refused", on=page)
    assert Team.objects.get().verdict_thresholds == {}

    page.get_by_label("Steal at (%)").fill("")
    page.get_by_role("button", name="Save").click()
    page.wait_for_load_state("load")
    assert "1 verdict threshold of its own" in page.locator("#own-thresholds").inner_text()
    assert Team.objects.get().verdict_thresholds == {"client_cpu_busy_percent": 92.0}
    assert page.js_errors == [] and phone_page.js_errors == []


def api_of(user: User, team: Team) -> Client:
    _, secret = ApiToken.issue(user, team, "tests")
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def owner_api(team: Team, thresholds: dict[str, float]) -> Client:
    """An owner's API client, the team holding these thresholds of its own."""
    owner = User.objects.create_user("api-owner")
    Membership.objects.create(user=owner, team=team, role=Membership.Role.OWNER)
    team.verdict_thresholds = thresholds
    team.save()
    return api_of(owner, team)


@pytest.mark.django_db
def test_the_api_gives_the_teams_settings_and_an_owner_patches_only_what_it_names(team):
    api = owner_api(team, {"stripe_ratio": 2.5})

    shown = api.get("/api/v1/teams/settings/").json()
    assert shown["team"] == team.name and shown["sweep_bound_minutes"] == team.sweep_bound_s // 60
    assert shown["verdict_thresholds"] == {"stripe_ratio": 2.5}
    assert shown["effective_thresholds"] == verdicts.DEFAULT_THRESHOLDS | {"stripe_ratio": 2.5}

    changed = api.patch("/api/v1/teams/settings/", {"verdict_thresholds": {"steal_percent": 8, "stripe_ratio": None}},
                        content_type="application/json")  # fmt: skip
    assert changed.status_code == 200, changed.content
    team.refresh_from_db()
    assert (
        team.verdict_thresholds == {"steal_percent": 8} and changed.json()["effective_thresholds"]["steal_percent"] == 8
    )
    assert changed.json()["effective_thresholds"]["stripe_ratio"] == verdicts.DEFAULT_THRESHOLDS["stripe_ratio"]

    bounded = api.patch("/api/v1/teams/settings/", {"sweep_bound_minutes": 30}, content_type="application/json")
    team.refresh_from_db()
    assert bounded.status_code == 200 and team.sweep_bound_s == 1800 and team.verdict_thresholds == {"steal_percent": 8}


@pytest.mark.django_db
def test_the_api_refuses_a_bad_threshold_naming_it_and_the_fix_and_keeps_what_was_stored(team):
    api = owner_api(team, {"stripe_ratio": 2.5})

    refused = api.patch(
        "/api/v1/teams/settings/",
        {"verdict_thresholds": {"client_cpu_busy_percent": 120, "no_such": 1, "steal_percent": "high"}},
        content_type="application/json",
    )
    assert refused.status_code == 400
    problems = refused.json()["verdict_thresholds"]
    assert "client_cpu_busy_percent: 120 is above 100; give a number from 50 to 100 %" in str(problems)
    assert "no_such: there is no such threshold" in str(problems) and "steal_percent: 'high' is not a number" in str(
        problems
    )
    long_sweep = api.patch("/api/v1/teams/settings/", {"sweep_bound_minutes": 0}, content_type="application/json")
    assert long_sweep.status_code == 400 and "sweep_bound_minutes" in long_sweep.json()
    team.refresh_from_db()
    assert team.verdict_thresholds == {"stripe_ratio": 2.5} and team.sweep_bound_s == 4 * 3600


@pytest.mark.django_db
@pytest.mark.parametrize("role", [Membership.Role.MEMBER, Membership.Role.VIEWER])
def test_members_and_viewers_read_the_settings_in_the_api_and_cannot_change_them(team, role):
    user = User.objects.create_user(f"api-{role}")
    Membership.objects.create(user=user, team=team, role=role)
    api = api_of(user, team)
    assert api.get("/api/v1/teams/settings/").status_code == 200
    refused = api.patch("/api/v1/teams/settings/", {"verdict_thresholds": {"steal_percent": 8}},
                        content_type="application/json")  # fmt: skip
    assert refused.status_code == 403
    team.refresh_from_db()
    assert team.verdict_thresholds == {}
