from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest

from jobs import clock as time_zones
from jobs.alerts import lifecycle as alerts
from jobs.teams import membership as teams


def current_team(request: HttpRequest) -> dict[str, Any]:
    if not request.user.is_authenticated:
        return {}
    membership = teams.current_membership(request)
    return {
        "current_team": membership and membership.team,
        "current_role": membership and membership.role,
        # The header's team switcher: only drawn for people in several teams (lazy: read when drawn).
        "my_memberships": lambda: list(request.user.memberships.select_related("team").order_by("team__name")),
        # The header's link to the invitations waiting for an answer, with their number.
        "my_invitation_count": lambda: teams.pending_invitations(request.user).count(),
        # The Alerts link's number: the team's open alerts (acknowledged ones are being looked after).
        "open_alert_count": lambda: membership and alerts.open_count(membership.team_id),
    }


def clock(request: HttpRequest) -> dict[str, Any]:
    """The reader's zone for base.html, which hands it to the charts (data attributes on <body>)."""
    chosen = getattr(request, "clock", None) or time_zones.choose("", None)
    labels = time_zones.abbreviations(chosen.zone)
    return {"clock": chosen, "clock_labels": json.dumps({str(k): v for k, v in labels.items()}, separators=(",", ":"))}
