from __future__ import annotations

from typing import Any

from django.http import HttpRequest

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
    }
