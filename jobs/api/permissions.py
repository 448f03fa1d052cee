"""Roles: viewers read; members also change disks, profiles, schedules, runs and imports; owners everything."""

from __future__ import annotations

from typing import Any

from rest_framework import permissions
from rest_framework.request import Request

from jobs.api.auth import access
from jobs.models import Membership

VIEWER_REFUSAL = "Viewers can look but not change anything; ask an owner of the team for the member role."
OWNER_REFUSAL = "Only owners of the team can change this; ask an owner."


class TeamRole(permissions.BasePermission):
    """Any member reads. Writes need the view's `change_role` (member by default): a viewer gets 403."""

    message = "You are not a member of any team; ask an owner to add you."

    def has_permission(self, request: Request, view: Any) -> bool:
        found = access(request)
        if found is None:
            return False
        if request.method in permissions.SAFE_METHODS:
            return True
        needed = getattr(view, "change_roles", {}).get(getattr(view, "action", None), view_role(view))
        if needed == Membership.Role.VIEWER:
            return True
        if found.role == Membership.Role.VIEWER:
            self.message = VIEWER_REFUSAL
            return False
        if needed == Membership.Role.OWNER and not found.is_owner:
            self.message = OWNER_REFUSAL
            return False
        return True


def view_role(view: Any) -> str:
    return getattr(view, "change_role", Membership.Role.MEMBER)
