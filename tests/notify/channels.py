"""What the alert-channel tests share: the event they publish (an opened regression alert), an API client with a
team's token, a JSON call, and the worker's delivery loop run in the test."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from jobs.api.models import ApiToken
from jobs.models import AlertChannel, Delivery, Team
from jobs.notify import delivery

# A real minus sign: the subject and body must carry non-ASCII text through SMTP, JSON and Apprise unharmed.
TITLE = "disk data on vm1, 4k randread \N{MINUS SIGN}31 %"
SUMMARY = "4k randread IOPS of data on vm1 fell from 4,000 to 2,760 (\N{MINUS SIGN}31 %) at run 41."
EVENT: dict[str, Any] = {
    "event": "opened",
    "alert": {
        "id": 7, "kind": "regression", "state": "open", "title": TITLE,
        "summary": SUMMARY,
        "team": "olga's team", "host": "vm1", "disk": "data", "profile": "4k randread",
        "opened_at": "2026-11-25T19:00:00Z", "acknowledged_at": None, "resolved_at": None,
        "url": "/alerts/7/", "chart_url": "/disks/3/?range=custom#disk-charts", "run_urls": ["/runs/41/"],
    },
}  # fmt: skip


def client_for(user: User, team: Team) -> Client:
    _, secret = ApiToken.issue(user, team, "tests")
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def post(client: Client, url: str, data: object = None, method: str = "post") -> Any:
    return getattr(client, method)(url, json.dumps(data or {}), content_type="application/json")


def deliver_all(on: AlertChannel, rounds: int = 10) -> Delivery:
    """Attempt every due delivery of the channel, as the worker would, until none is due; its latest delivery."""
    for _ in range(rounds):
        due = on.deliveries.filter(state__in=[Delivery.State.QUEUED, Delivery.State.FAILED])
        if not due.exists():
            break
        for pk in due.values_list("pk", flat=True):
            delivery.attempt(pk)
    return on.deliveries.latest("created_at")
