"""Alerts on synchronised groups: a group's total while every member ran under X % of its limit, and its members
more than N % apart, judged when a group ends (the hook in jobs/sets/advancing.py, after the commit), handed to a
real webhook receiver, resolved by the next group of the series that meets the rule; the rules' settings."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from jobs.alerts import evaluate
from jobs.models import Alert, AlertRule, Membership
from jobs.notify.channels import ChannelInput, save_channel
from tests.factories import DiskFactory, ProfileFactory
from tests.notify.channels import deliver_all
from tests.sets.groups import finished_group

Kind = Alert.Kind
# Real commits: the group's hook runs once its end commits, as in a worker.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pair(transactional_db, broker):
    """Two disks of 4,000 IOPS each (a limit of 8,000 together) and a profile to run on them; the tasks the group
    sends go to the test's own broker, where no worker takes them."""
    first = DiskFactory(with_limits=True)
    second = DiskFactory(host=first.host, with_limits=True)
    return first, second, ProfileFactory(team=first.team, name="together")


def test_a_group_under_its_limit_and_far_apart_opens_both_alerts_told_to_a_webhook_and_the_next_group_resolves_them(
    pair, http_receiver
):
    first, second, profile = pair
    hook, _ = save_channel(None, ChannelInput(kind="webhook", name="ops", url=http_receiver.url), team=first.team,
                           user=None)  # fmt: skip

    low = finished_group([first, second], profile, [1000, 2000])
    deliver_all(hook)

    below = Alert.objects.get(kind=Kind.GROUP_BELOW_PROMISE)
    spread = Alert.objects.get(kind=Kind.GROUP_SPREAD)
    assert below.state == spread.state == "open" and below.run_set_id == low.pk
    assert below.summary.startswith(
        f"Group {low.pk} gave 3,000 IOPS while every member ran (10.0 s): 37 % of its limit of 8,000 IOPS (the "
        "members' limits summed), under the 95 %"
    )
    assert f"Group {low.pk}'s members' IOPS were 50.0 % apart" in spread.summary
    assert "the slowest was member 1" in spread.summary
    assert set(below.runs.values_list("pk", flat=True)) == set(low.members.values_list("pk", flat=True))
    told = [json.loads(request.body) for request in http_receiver.requests]
    assert sorted((t["event"], t["alert"]["kind"]) for t in told) == [("opened", "group_below_promise"),
                                                                      ("opened", "group_spread")]  # fmt: skip
    assert told[0]["alert"]["chart_url"].endswith(f"/sets/{low.pk}/history/")
    reader = User.objects.create_user("reader")
    Membership.objects.create(user=reader, team=first.team, role=Membership.Role.VIEWER)
    client = Client()
    client.force_login(reader)
    alert_page = client.get(f"/alerts/{below.pk}/").content.decode()
    assert f'href="/sets/{low.pk}/history/" id="alert-group-history"' in alert_page

    # The same disks in the other order are the same series: a group at 97.5 % of its limit, 2.5 % apart.
    good = finished_group([second, first], profile, [3900, 4000])
    deliver_all(hook)

    below.refresh_from_db()
    spread.refresh_from_db()
    assert below.state == spread.state == "resolved"
    assert below.resolution == f"group {good.pk} gave 7,900 IOPS, 98 % of its limit"
    assert spread.resolution == f"group {good.pk}'s members were 2.5 % apart"
    assert [json.loads(r.body)["event"] for r in http_receiver.requests].count("resolved") == 2


def test_the_rules_percentages_are_the_teams_and_a_partial_group_is_not_judged(pair):
    first, second, profile = pair
    AlertRule.objects.create(team=first.team, kind=Kind.GROUP_BELOW_PROMISE, promise_percent=30)
    AlertRule.objects.create(team=first.team, kind=Kind.GROUP_SPREAD, spread_percent=60)

    finished_group([first, second], profile, [1000, 2000])  # 37 % of the limit, 50 % apart: within both
    finished_group([first, second], profile, [100, None])  # partial: its total leaves member 2 out

    assert not Alert.objects.filter(kind__in=[Kind.GROUP_BELOW_PROMISE, Kind.GROUP_SPREAD]).exists()


def test_a_group_whose_check_fails_still_ends_and_the_failure_is_logged(pair, monkeypatch, caplog):
    first, second, profile = pair

    def broken(group):
        raise RuntimeError("the limits could not be read")

    monkeypatch.setattr(evaluate, "group_below_promise", broken)
    group = finished_group([first, second], profile, [1000, 2000])

    assert group.state == "succeeded" and group.result["totals"]["all_running"]["iops"] == 3000
    assert "group_ended" in caplog.text and "the limits could not be read" in caplog.text


def test_the_rules_page_and_api_set_the_group_percentages_naming_a_bad_value(owner_client, team):
    page = owner_client.post("/alerts/rules/", {
        **{f"{kind}-enabled": "on" for kind in Kind.values},
        "below_promise-consecutive_runs": 3, "stale-intervals": 2,
        "group_below_promise-promise_percent": 90, "group_spread-spread_percent": 150,
    })  # fmt: skip
    assert page.status_code == 200 and "Ensure this value is less than or equal to 100." in page.content.decode()

    owner_client.post("/alerts/rules/", {
        **{f"{kind}-enabled": "on" for kind in Kind.values},
        "below_promise-consecutive_runs": 3, "stale-intervals": 2,
        "group_below_promise-promise_percent": 90, "group_spread-spread_percent": 15,
    })  # fmt: skip
    assert AlertRule.of(team.pk, Kind.GROUP_BELOW_PROMISE).promise_percent == 90
    assert AlertRule.of(team.pk, Kind.GROUP_SPREAD).spread_percent == 15


def test_the_minutes_sweep_judges_a_group_alert_again_on_its_series_latest_group(pair):
    first, second, profile = pair
    low = finished_group([first, second], profile, [1000, 2000])
    below = Alert.objects.get(kind=Kind.GROUP_BELOW_PROMISE)
    spread = Alert.objects.get(kind=Kind.GROUP_SPREAD)

    AlertRule.objects.create(team=first.team, kind=Kind.GROUP_BELOW_PROMISE, promise_percent=30)
    evaluate.sweep()
    below.refresh_from_db()
    assert below.state == "resolved" and below.resolution == f"group {low.pk} gave 3,000 IOPS, 37 % of its limit"

    low.delete()
    evaluate.sweep()
    spread.refresh_from_db()
    assert spread.state == "resolved" and spread.resolution == "its group was deleted"
